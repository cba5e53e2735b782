"""Serve MathJax, RequireJS and the widget manager from the book itself, so pages work offline.

The files come from ``node_modules/`` (``npm ci`` installs the versions pinned in
``package.json`` and ``package-lock.json``); this extension copies the few that
pages load into ``_static/vendor/`` and points Sphinx and MyST-NB at them
instead of at a CDN.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

FILES = {
    "mathjax/tex-mml-chtml.js": "mathjax/es5/tex-mml-chtml.js",
    "mathjax/output/chtml/fonts/woff-v2": "mathjax/es5/output/chtml/fonts/woff-v2",
    "require.min.js": "requirejs/require.js",
    "html-manager/embed-amd.js": "@jupyter-widgets/html-manager/dist/embed-amd.js",
    "html-manager/libembed-amd.js": "@jupyter-widgets/html-manager/dist/libembed-amd.js",
}
FONTS = (".woff", ".woff2", ".ttf", ".eot", ".svg")


def stage(app, config) -> None:
    root = Path(app.srcdir)
    modules = root / "node_modules"
    if not modules.is_dir():
        raise ExtensionError("offline_assets: node_modules/ is missing; run `npm ci` (make book does)")
    staged = Path(app.outdir).parent / "vendor_static"
    vendor = staged / "vendor"
    shutil.rmtree(staged, ignore_errors=True)
    for dest, src in FILES.items():
        source, target = modules / src, vendor / dest
        if not source.exists():
            raise ExtensionError(f"offline_assets: expected {source}, it is missing; run `npm ci`")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)
    # The widget manager's icon fonts sit next to embed-amd.js, which loads them by relative URL.
    for font in (modules / "@jupyter-widgets/html-manager/dist").iterdir():
        if font.suffix in FONTS:
            shutil.copyfile(font, vendor / "html-manager" / font.name)
    config.html_static_path = [*config.html_static_path, str(staged)]
    config.mathjax_path = "vendor/mathjax/tex-mml-chtml.js"
    config.nb_ipywidgets_js = {
        "vendor/require.min.js": {},
        "vendor/html-manager/embed-amd.js": {"data-jupyter-widgets-cdn-only": "false"},
    }


def setup(app):
    app.connect("config-inited", stage, priority=900)
    return {"version": "1.0", "parallel_read_safe": True}
