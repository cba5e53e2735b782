"""Serve MathJax, RequireJS and the widget manager from the book itself, so pages work offline.

The files come from ``node_modules/`` (``npm ci`` installs the versions pinned in
``package.json`` and ``package-lock.json``); this extension copies the few that
pages load into ``_static/vendor/`` and points Sphinx and MyST-NB at them
instead of at a CDN.

It also adds the book's accessibility layer to every page: ``book/_static/accessibility.js``
and ``.css`` (what they repair is listed at the top of each), formulas out of the tab order
(MathJax's menu, opened from the page's formula button, can put them back), and no script
twice (Sphinx 7.4 repeats inline scripts, and sphinx-thebe's ``const`` fails the second time).
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
OWN = Path(__file__).resolve().parent.parent / "_static"
ACCESSIBILITY = ("accessibility.js", "accessibility.css")
# The widget manager finds its icon fonts next to the AMD module that asks for them: point that
# module's folder at the copy in _static/vendor/html-manager/ (runs after RequireJS, before the manager).
AMD_PATHS = """require.config({paths: {"@jupyter-widgets/html-manager/dist":
  new URL(".", document.currentScript.src).href.replace(/\\/$/, "")}});
"""


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
    (vendor / "html-manager" / "amd-paths.js").write_text(AMD_PATHS, encoding="utf-8")
    for name in ACCESSIBILITY:
        shutil.copyfile(OWN / name, staged / name)
    config.html_static_path = [*config.html_static_path, str(staged)]
    config.mathjax_path = "vendor/mathjax/tex-mml-chtml.js"
    mathjax = dict(config.mathjax3_config or {})
    mathjax["options"] = {**mathjax.get("options", {}), "menuOptions": {"settings": {"inTabOrder": False}}}
    config.mathjax3_config = mathjax
    config.nb_ipywidgets_js = {
        "vendor/require.min.js": {},
        "vendor/html-manager/amd-paths.js": {},
        "vendor/html-manager/embed-amd.js": {"data-jupyter-widgets-cdn-only": "false"},
    }
    # the theme's colour mode starts as "auto" (left empty, its script logs an error on a first visit)
    config.html_context = {"default_mode": "auto", **(config.html_context or {})}
    # after MathJax's configuration (priority 500), whose widget shim it adds
    app.add_js_file("accessibility.js", priority=600)
    app.add_css_file("accessibility.css")


def one_of_each_script(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated scripts: Sphinx 7.4 adds an extension's inline scripts once with filename None and
    once with "", and a second ``const THEBE_JS_URL`` is a SyntaxError."""
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"][:] = unique


def setup(app):
    app.connect("config-inited", stage, priority=900)
    app.connect("html-page-context", one_of_each_script, priority=900)
    return {"version": "1.0", "parallel_read_safe": True}
