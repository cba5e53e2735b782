"""The explorers on the static page, and what each chapter page weighs.

Every explorer (``transformer/viz/explorer.py``) saves two parts: ``explorer-live``, the controls a
kernel redraws, and ``explorer-static``, copies of the controls linked in the browser to views
stored for every value on their grid. A kernel hides the static part; this extension's stylesheet
shows it on the book's pages and hides the live one, whose controls do nothing without a kernel.

A control the page cannot precompute (free text) is replaced by a note with two links,
``#launch-colab`` and ``#launch-binder``; once the pages are written they become the page's own
launch links (the buttons configured under ``launch_buttons`` in ``_config.yml``).

At the end of the build it logs the weight of every chapter page: its HTML (with the saved widget
state and the stored views) and the images only that page uses. A page over ``PAGE_BUDGET`` is a
warning, hence an error with ``--warningiserror``. The weights are also written to
``page-weights.json`` next to the pages.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
PAGE_BUDGET = 2_000_000  # bytes: a chapter page and the assets only it uses
CSS = """/* The explorers on the static page (book/_ext/static_explorers.py): stored views, no kernel. */
.explorer-live { display: none !important; }
.explorer-static { display: flex !important; }
.explorer-static .explorer-kernel-note { display: inline-block; padding: 2px 0; }
.explorer-static .explorer-launch {
  display: inline-block; margin-left: 6px; padding: 0 8px; border: 1px solid currentColor; border-radius: 4px;
  text-decoration: none;
}
"""
STATE = re.compile(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', re.S)
LAUNCH = {
    "#launch-colab": re.compile(r'href="(https://colab\.research\.google\.com/[^"]+\.ipynb)"'),
    "#launch-binder": re.compile(r'href="(https://mybinder\.org/v2/[^"]+)"'),
}


def stage(app, config) -> None:
    staged = Path(app.outdir).parent / "explorers_static"
    staged.mkdir(parents=True, exist_ok=True)
    (staged / "explorers.css").write_text(CSS, encoding="utf-8")
    config.html_static_path = [*config.html_static_path, str(staged)]
    app.add_css_file("explorers.css")


def _images(page: Path, text: str, root: Path) -> set[Path]:
    found = set()
    for src in re.findall(r'(?:src|href)="([^"#?]+\.(?:png|jpe?g|svg|gif))"', text):
        if not re.match(r"^[a-z]+:", src):
            path = (page.parent / src).resolve()
            if path.is_file() and "_static" not in path.relative_to(root.resolve()).parts:
                found.add(path)
    return found


def finish(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    root = Path(app.outdir)
    pages = sorted(p for p in root.rglob("*.html") if "_static" not in p.parts)
    texts = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if "explorer-launch" in text:
            for placeholder, pattern in LAUNCH.items():
                match = pattern.search(text)
                if match and placeholder in text:
                    text = text.replace(placeholder, match.group(1))
            page.write_text(text, encoding="utf-8")
        texts[page] = text
    uses = {page: _images(page, text, root) for page, text in texts.items()}
    users = Counter(image for images in uses.values() for image in images)
    weights = {}
    for page in pages:
        rel = page.relative_to(root).as_posix()
        if not rel.startswith("notebooks/"):
            continue
        state = STATE.search(texts[page])
        own = sum(image.stat().st_size for image in uses[page] if users[image] == 1)
        html = page.stat().st_size
        weights[rel] = {"html": html, "widget_state": len(state.group(1).encode()) if state else 0,
                        "own_images": own, "total": html + own}
    for rel, w in weights.items():
        LOGGER.info(f"page weight: {rel}: {w['total'] / 1e6:.2f} MB (HTML {w['html'] / 1e6:.2f} MB, of which widget "
                    f"state {w['widget_state'] / 1e6:.2f} MB; images {w['own_images'] / 1e6:.2f} MB)")
        if w["total"] > PAGE_BUDGET:
            LOGGER.warning(f"page weight: {rel} weighs {w['total'] / 1e6:.2f} MB, over the budget of "
                           f"{PAGE_BUDGET / 1e6:.0f} MB")
    (root / "page-weights.json").write_text(json.dumps(weights, indent=1, sort_keys=True), encoding="utf-8")


def setup(app):
    app.connect("config-inited", stage)
    app.connect("build-finished", finish)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
