"""A book that works from ``file://`` with no network: local vega, local MathJax, a check.

Three pieces, one per way a static Jupyter Book page could reach outside itself:

1. **Charts.** Altair's default output is the ``application/vnd.vegalite.v6+json`` mimetype,
   which needs JavaScript the static book does not have, and its ``html`` renderer loads
   vega from a CDN. :func:`chart_bundle` (enabled as the ``arithmech`` renderer by
   :func:`enable_renderer`) emits both: the vega-lite mimetype for Jupyter, and a ``text/html``
   ``<div>`` plus an inline ``vegaEmbed(...)`` call for the book. The ``vegaEmbed`` it calls
   comes from one script, :data:`VEGA_JS`, that :func:`vendor_assets` writes from the
   vega / vega-lite / vega-embed sources bundled inside ``vl-convert-python`` and that the
   book's ``_config.yml`` loads on every page (``html_js_files``).
2. **Math and the live explorer.** MathJax 3 from npm (``es5/``), installed outside the repository by ``make setup``
   (``npm install --prefix .venv/share/arithmech mathjax@3``), copied by :func:`vendor_assets`
   next to the vega bundle; ``_config.yml`` points Sphinx's ``mathjax_path`` at it. The Explorer page's live
   explorer (the embedded model's weights and its JavaScript, :mod:`arithmech.report.views.live_explorer`) is written
   there too, under ``vendor/live/``; only that page loads it.
3. **The check.** :func:`external_references` lists every ``http(s)`` resource a built page
   or stylesheet would load (scripts, stylesheets, images, frames, CSS ``url()``/``@import``);
   plain links (``<a href>``) are fine. The book build fails when the list is not empty.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import altair as alt

from arithmech.core.inputs import quoted
from arithmech.report.views import live_explorer  # the Explorer page's live explorer: the embedded model in JavaScript

# Where vendor_assets writes, relative to the book's root; _config.yml adds book/_static to
# html_static_path, so Sphinx copies this to _build/html/_static/vendor/.
STATIC_DIR = Path("book") / "_static"
VEGA_JS = "vendor/vega/vega-bundle.js"  # relative to _static (html_js_files)
MATHJAX_JS = "vendor/mathjax/tex-chtml.js"  # relative to _static (mathjax_path)
MATHJAX_VERSION = "3.2.2"
MATHJAX_PARTS = ("tex-chtml.js", "input", "output", "ui", "a11y", "adaptors")  # not sre/, not other combos
CHART_CLASS = "arithmech-chart"


# ------------------------------------------------------------------------------------ 1. charts
_counter = 0


def _vl_version(spec: dict) -> str:
    """``"https://vega.github.io/schema/vega-lite/v6.4.1.json"`` → ``"6.4"``."""
    m = re.search(r"/v(\d+)\.(\d+)", spec.get("$schema", ""))
    return f"{m.group(1)}.{m.group(2)}" if m else ""


def chart_html(spec: dict, embed_options: dict | None = None) -> str:
    """The ``text/html`` of one chart: a ``<div>`` and the script that draws ``spec`` into it.

    The id is a hash of the spec plus a counter, so re-running a notebook gives the same HTML.
    ``</`` is escaped inside the script so a string in the data cannot close the tag.
    """
    global _counter
    _counter += 1
    payload = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    div = f"{CHART_CLASS}-{hashlib.sha1(payload.encode()).hexdigest()[:10]}-{_counter}"
    opts = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}
    opts.update(embed_options or {})
    esc = lambda s: s.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return (
        f'<div class="{CHART_CLASS}" id="{div}"></div>\n'
        '<script type="text/javascript">\n'
        "(function () {\n"
        f'  var el = document.getElementById("{div}");\n'
        '  if (typeof window.vegaEmbed !== "function") {\n'
        '    el.textContent = "[chart: vega-embed is not loaded on this page; build the book with '
        '`python -m arithmech book`]";\n'
        "    return;\n"
        "  }\n"
        f"  window.vegaEmbed(el, {esc(payload)}, {esc(json.dumps(opts))})\n"
        '    .catch(function (e) { el.textContent = "[chart error: " + e + "]"; console.error(e); });\n'
        "})();\n"
        "</script>"
    )


def chart_bundle(spec: dict, **metadata: Any) -> tuple[dict, dict]:
    """Altair renderer: ``(mimebundle, metadata)`` with the vega-lite mimetype and ``text/html``.

    Jupyter front ends pick the mimetype; the book (myst-nb, which has no renderer for it)
    picks ``text/html``. (The mimetype is spelled ``...v6+json``: altair 6's own constant,
    ``...v6.json``, is not a JSON mimetype for nbformat, which then refuses to save the notebook.)
    """
    title = spec.get("title")
    title = title.get("text") if isinstance(title, dict) else title
    major = _vl_version(spec).split(".")[0] or "6"
    bundle = {
        f"application/vnd.vegalite.v{major}+json": spec,
        "text/html": chart_html(spec, metadata.get("embed_options")),
        "text/plain": f"<altair chart{': ' + str(title) if title else ''}>",
    }
    return bundle, {}


def enable_renderer() -> None:
    """Register and enable the ``arithmech`` altair renderer (see :func:`chart_bundle`)."""
    alt.renderers.register("arithmech", chart_bundle)
    alt.renderers.enable("arithmech")


# ---------------------------------------------------------------------------- 2. vendored assets
def vega_bundle() -> str:
    """vega + vega-lite + vega-embed (from ``vl-convert-python``), in one function scope: the bundle's top-level
    ``const _`` would otherwise collide with Sphinx's global ``_`` (a SyntaxError, and no vegaEmbed). It sets
    ``window.vegaEmbed`` itself."""
    import vl_convert as vlc  # lazy: the book extra

    vl = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    # vl-convert's stub makes `snippet` required; the function takes none and returns the bare bundle
    bundle = vlc.javascript_bundle(vl_version=vl)  # type: ignore[call-arg]
    return "(function () {\n" + bundle + "\n})();\n"


def jupyter_vega() -> None:
    """In JupyterLab (``make lab``, :mod:`arithmech.lab`), show the vega bundle once as a script output, so that
    :func:`chart_html`'s ``vegaEmbed`` call draws there too: JupyterLab renders vega-lite 5 itself, not the
    vega-lite 6 of altair 6, and then shows the ``text/html`` of :func:`chart_bundle`. The script is a JSON
    string evaluated in the page's global scope, so no ``</script>`` in the bundle can end the tag."""
    from IPython.display import HTML, display  # lazy: a kernel

    code = json.dumps(vega_bundle()).replace("</", "<\\/")
    display(HTML(f"<script>if (typeof window.vegaEmbed !== 'function') {{ (0, eval)({code}); }}</script>"))


def mathjax_source() -> Path:
    """The ``es5/`` folder of an npm MathJax 3: ``$ARITHMECH_MATHJAX``, else the venv's copy."""
    cands = [Path(os.environ["ARITHMECH_MATHJAX"])] if os.environ.get("ARITHMECH_MATHJAX") else []
    cands += [
        Path(sys.prefix) / "share" / "arithmech" / "node_modules" / "mathjax" / "es5",
        Path("node_modules") / "mathjax" / "es5",
    ]
    for c in cands:
        if (c / "tex-chtml.js").exists():
            return c
    raise FileNotFoundError(
        "offline MathJax not found (looked in " + ", ".join(quoted(c) for c in cands) + "). Install it with "
        f"`npm install --prefix {Path(sys.prefix) / 'share' / 'arithmech'} mathjax@{MATHJAX_VERSION}` "
        "(or `make setup`), or set ARITHMECH_MATHJAX to a MathJax 3 es5/ folder."
    )


def vendor_assets(root: str | Path = ".") -> list[Path]:
    """Write the vega bundle, copy MathJax and write the live explorer into ``<root>/book/_static/vendor/``.

    The vega bundle (~0.9 MB, from ``vl_convert.javascript_bundle``) is regenerated only when
    vl-convert's or altair's vega-lite version changes. Returns the files written or kept.
    """
    import vl_convert as vlc  # lazy: the book extra

    static = Path(root) / STATIC_DIR
    vega = static / VEGA_JS
    vl = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    version = vlc.__version__  # type: ignore[attr-defined]  # vl-convert's stub omits the module's __version__
    stamp = (
        f"/* wrapped; vl-convert {version}, vega-lite {vl}, vega {vlc.get_vega_version()}, "
        f"vega-embed {vlc.get_vega_embed_version()} */\n"
    )
    if not vega.exists() or not vega.read_text().startswith(stamp):
        vega.parent.mkdir(parents=True, exist_ok=True)
        tmp = vega.with_suffix(".tmp")
        tmp.write_text(stamp + vega_bundle())
        tmp.replace(vega)

    src, dst = mathjax_source(), static / Path(MATHJAX_JS).parent
    stamp_file = dst / ".source"
    if not stamp_file.exists() or stamp_file.read_text() != str(src.resolve()):
        if dst.exists():
            shutil.rmtree(dst)
        dst.mkdir(parents=True)
        for part in MATHJAX_PARTS:
            p = src / part
            if p.is_dir():
                shutil.copytree(p, dst / part)
            elif p.exists():
                shutil.copy2(p, dst / part)
        stamp_file.write_text(str(src.resolve()))
    return [vega, dst / "tex-chtml.js", *live_explorer.write_assets(static)]


# ------------------------------------------------------------------------------------- 3. check
_TAG = re.compile(r"<(script|link|img|iframe|source|video|audio|embed|object|track|input)\b([^>]*)>", re.I)
_ATTR = re.compile(r"""\b(src|href|data|poster|srcset)\s*=\s*["']?\s*(https?:)?//""", re.I)
_CSS_URL = re.compile(r"""(?:url\(\s*["']?|@import\s+["'])\s*((?:https?:)?//[^"')\s]+)""", re.I)


def external_references(html_dir: str | Path) -> list[str]:
    """Every resource a built page or stylesheet would fetch from outside the build.

    Scans ``*.html`` for ``http(s)://`` or protocol-relative ``//`` in ``src``/``href``/``data``
    of tags that load things (``<script>``, ``<link>``, ``<img>``, ``<iframe>``, …; ``<a>`` is a
    plain link and allowed), for CSS ``url()``/``@import`` inside pages and ``*.css`` files.
    ``<link rel="canonical">`` and similar non-loading links are allowed.
    Returns ``"path: snippet"`` lines.
    """
    root = Path(html_dir)
    bad = []
    for p in sorted(root.rglob("*.html")):
        text = p.read_text(errors="replace")
        for m in _TAG.finditer(text):
            tag, attrs = m.group(1).lower(), m.group(2)
            if tag == "link" and re.search(
                r"""rel\s*=\s*["']?(canonical|alternate|author|license|me)\b""", attrs, re.I
            ):
                continue
            if _ATTR.search(attrs):
                bad.append(f"{p.relative_to(root)}: {m.group(0)[:160]}")
        for m in _CSS_URL.finditer(text):
            bad.append(f"{p.relative_to(root)}: {m.group(0)[:160]}")
    for p in sorted(root.rglob("*.css")):
        for m in _CSS_URL.finditer(p.read_text(errors="replace")):
            bad.append(f"{p.relative_to(root)}: {m.group(0)[:160]}")
    return bad
