"""Open a built page in headless Chromium with all network cut, and report what happened.

Selenium drives the Debian ``chromium`` through its ``chromedriver`` (``make chromium`` installs
both); both are found on ``PATH`` and handed to Selenium, so Selenium Manager never downloads one.
Chromium starts with a fresh profile, every background service off, a dead proxy, a host resolver
that resolves nothing, and the page's network emulated offline (a DevTools command sent through
``execute_cdp_cmd``). Chrome's performance log (``goog:loggingPrefs``) records every request the
page makes (any scheme but ``file:``, ``data:``, ``blob:``, ``about:`` counts as leaving the
machine) and every failed load; its browser log records console errors and uncaught exceptions.
A script run in the page counts the charts vega-embed drew.

``python tests/book/browser.py`` prints one line naming what is missing (exit 1), or nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome:", "devtools:")
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
INSTALL = "make chromium"          # apt-get install -y chromium chromium-driver (as root)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
         "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--allow-file-access-from-files",
         "--window-size=1280,2000"]

# Run in the page: chart containers written by arithmech.report.build.offline.chart_html, the ones
# vega-embed has drawn into (an svg.marks or a canvas), and MathJax's output.
COUNT_JS = """return {
  charts: document.querySelectorAll('.arithmech-chart').length,
  drawn: Array.from(document.querySelectorAll('.arithmech-chart'))
              .filter(d => d.querySelector('svg.marks, canvas')).length,
  marks: document.querySelectorAll('svg.marks').length + document.querySelectorAll('canvas').length,
  math: document.querySelectorAll('span.math, div.math').length,
  mathjax: document.querySelectorAll('mjx-container').length,
  live: document.querySelectorAll('#arithmech-live').length,
  live_ready: !!window.arithmechLive,
  text: document.body ? document.body.innerText.length : 0
};"""

LIVE_PROMPT = "Q: What is 6 plus 2? A:"        # typed into a page's live explorer by the reader check
# Run in the page after typing into the live explorer (arithmech.report.views.live_explorer) and pressing run: what it shows.
LIVE_JS = """const b = document.getElementById('arithmech-live');
return {status: (b.querySelector('.arithmech-live-status') || {}).textContent || '',
        shown: (b.querySelector('.arithmech-live-shown') || {}).textContent || '',
        top: Array.from(b.querySelectorAll('.arithmech-live-top tbody tr')).length,
        cells: b.querySelectorAll('.arithmech-live-cell').length,
        bars: b.querySelectorAll('.arithmech-live-bars > div').length};"""

# Run in the page: what a reader sees. The text column is the article; every chart's own width (the
# svg's width attribute, before any CSS scaling) must fit it, no output may scroll sideways or run
# past it, and the first visible thing in the article must be the page's title (its h1).
READER_JS = """
const art = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const col = art.getBoundingClientRect();
const visible = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
  return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
let first = null;
for (const e of art.querySelectorAll('h1, p, div.cell, div.admonition, table, pre, ul, ol, img, svg')) {
  if (visible(e) && e.innerText !== undefined && (e.innerText.trim() || e.tagName === 'svg')) { first = e; break; }
}
const outputs = Array.from(art.querySelectorAll('.cell_output'));
const wide = [];
for (const o of outputs) for (const e of [o, ...o.querySelectorAll('*')]) {
  const s = getComputedStyle(e);
  if (e.scrollWidth > e.clientWidth + 2 && ['auto', 'scroll'].includes(s.overflowX) && visible(e))
    wide.push('scrolls sideways: ' + e.tagName + ' ' + (e.innerText || '').slice(0, 60));
}
// every visible table and code block of the page (prose too): inside the column, nothing cut or scrolled
for (const e of art.querySelectorAll('table, pre')) {
  if (!visible(e) || e.closest('.cell_output')) continue;          // outputs: checked above
  if (e.closest('.above-input, .toggle-hidden, details:not([open])')) continue;   // folded code: opened on demand
  const r = e.getBoundingClientRect();
  if (r.right > col.right + 2) wide.push('wider than the column: ' + e.tagName + ' ' + (e.innerText || '').slice(0, 60));
  else if (e.scrollWidth > e.clientWidth + 2) wide.push('scrolls sideways: ' + e.tagName + ' ' + (e.innerText || '').slice(0, 60));
}
for (const c of art.querySelectorAll('td, th')) {
  if (visible(c) && c.scrollWidth > c.clientWidth + 2 && getComputedStyle(c).textOverflow === 'ellipsis')
    wide.push('cell cut: ' + (c.innerText || '').slice(0, 60));
}
// raw Python values a reader should never see: True/False/None/nan cells, dict reprs, tokenizer marks
const raw = [];
for (const c of art.querySelectorAll('td, th')) {
  const t = (c.innerText || '').trim();
  const literal = c.querySelector('code') && c.querySelector('code').innerText.trim() === t;   // `False`: a default
  if (visible(c) && !literal && (/^(True|False|None|nan|NaN)$/.test(t) || /^[{]['"]/.test(t)))
    raw.push('cell ' + JSON.stringify(t.slice(0, 40)));
}
for (const o of outputs) {
  if (!visible(o)) continue;
  const t = o.innerText || '';
  const m = t.match(/[{]'[^']{1,40}': |Ġ/);
  if (m) raw.push('output ' + JSON.stringify(t.slice(Math.max(0, m.index - 30), m.index + 40)));
  // a Python list printed raw ("[0, 0, 2]", "['21.2'"), outside code font (a footer's `models=['embedded']`)
  const plain = (() => { const c = o.cloneNode(true); c.querySelectorAll('code, script, style').forEach(x => x.remove());
                         return c.textContent || ''; })();
  const list = plain.match(/\\['|\\[-?\\d+(?:\\.\\d+)?(?:, -?\\d+(?:\\.\\d+)?){2,}\\]/);
  if (list) raw.push('raw list ' + JSON.stringify(plain.slice(Math.max(0, list.index - 30), list.index + 30)));
  // a head named by its bare file id reads like a number: "0.0: 0.006 ± …", "heads 2.0, 3.3" (not "[0.25, 0.5]")
  const id = t.match(/(?:^|\\n)\\s*\\d{1,2}\\.\\d{1,2}: |(?<![\\[(=\\d.,\\w−+\\-])(?<!heads )\\d{1,2}\\.\\d{1,2}, \\d{1,2}\\.\\d{1,2}(?![\\d%])/);
  if (id) raw.push('bare head id ' + JSON.stringify(t.slice(Math.max(0, id.index - 30), id.index + 30)));
}
// a column naming components (its header says head, circuit, component, receiver or sender, or is "name")
// whose cell holds nothing but ids ("0.3", "2.0, 3.3", "MLP 0 0.0"); headers from the last header row
for (const table of art.querySelectorAll('table')) {
  const rows = table.querySelectorAll('thead tr');
  const last = rows.length ? rows[rows.length - 1] : null;
  const heads = last ? Array.from(last.children).map(h => (h.innerText || '').trim().toLowerCase()) : [];
  for (const row of table.querySelectorAll('tbody tr')) Array.from(row.children).forEach((c, i) => {
    const h = heads[i] || '';
    if ((h === 'name' || /head|circuit|component|receiver|sender/.test(h)) && visible(c)
        && /^(?:(?:MLP \\d+|\\d{1,2}\\.\\d{1,2})[ ,]*)*\\d{1,2}\\.\\d{1,2}(?:[ ,]+(?:MLP \\d+|\\d{1,2}\\.\\d{1,2}))*$/.test((c.innerText || '').trim()))
      raw.push('bare head id in column ' + h + ': ' + c.innerText.trim().slice(0, 40));
  });
}
const charts = Array.from(art.querySelectorAll('.arithmech-chart svg.marks')).map(
  s => parseFloat(s.getAttribute('width') || s.getBoundingClientRect().width));
return {column: col.width, first_tag: first ? first.tagName : null,
        first_text: first ? (first.innerText || '').slice(0, 80) : '',
        h1: (art.querySelector('h1') || {innerText: ''}).innerText.slice(0, 80),
        outputs: outputs.map(o => o.innerText).join('\\n'), chart_widths: charts, wide: wide.slice(0, 5),
        raw: raw.slice(0, 10)};
"""


# Run in the page: every visible table header cell (th) whose text the browser broke across lines inside a word,
# read character by character from the laid-out text (a Range per character: a character on a lower line than the
# one before it, with no space between them, starts a new line inside a word). A break right after a hyphen, a
# slash, a dash or a soft hyphen is a break between word parts, not inside a word. "thresh|old" is reported.
BROKEN_HEADER_JS = """
const broken = [];
const visible = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
  return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
for (const th of document.querySelectorAll('th')) {
  if (!visible(th)) continue;
  const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
  let prev = null, space = false, node;
  while ((node = walker.nextNode())) {
    const t = node.textContent;
    for (let i = 0; i < t.length; i++) {
      if (/\\s/.test(t[i])) { space = true; continue; }
      const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
      const r = range.getClientRects()[0];
      if (!r) continue;
      if (prev && !space && r.top > prev.top + prev.height / 2 && !/[-\\u00ad\\u2010-\\u2014\\/]/.test(prev.ch))
        broken.push((th.innerText || '').replace(/\\s+/g, ' ').trim().slice(0, 60) + ' (at "' + prev.ch + '|' + t[i] + '")');
      prev = {top: r.top, height: r.height, ch: t[i]}; space = false;
    }
  }
}
return broken;
"""


def executables() -> tuple[str | None, str | None]:
    """``(chromium, chromedriver)`` paths found on ``PATH``, ``None`` where absent."""
    exe = next((p for p in map(shutil.which, BROWSERS) if p), None)
    return exe, shutil.which("chromedriver")


def missing() -> str | None:
    """One line naming what the browser tests lack and the command that installs it, or ``None``."""
    exe, driver = executables()
    lack, fixes = [], []
    if not exe:
        lack.append("chromium")
    if not driver:
        lack.append("chromedriver (Debian package chromium-driver)")
    if lack:
        fixes.append(f"`{INSTALL}` (as root)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        lack.append("the selenium package")
        fixes.append("`pip install -r requirements.txt`")
    if not lack:
        return None
    return f"browser tests need {' and '.join(lack)}: install with {' and '.join(fixes)}"


def require_browser() -> None:
    """Skip the calling test when Chromium, chromedriver or Selenium is missing; under ``CI=true``
    fail it instead (CI must never skip the browser checks). Either way with one line."""
    import pytest
    problem = missing()
    if problem is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{problem} (CI=true: the browser checks may not be skipped)", pytrace=False)
    pytest.skip(problem)


@dataclass
class PageReport:
    url: str
    counts: dict = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)     # non-local requests: must stay empty
    errors: list[str] = field(default_factory=list)       # console errors, exceptions, failed loads


class Browser:
    """``with Browser() as b: report = b.open(path)``; one Chromium for many pages."""

    def __init__(self, loopback: bool = False) -> None:
        """``loopback``: 127.0.0.1 stays reachable (a local server under test, e.g. JupyterLab); every other
        host still goes to the dead proxy and resolves nowhere, and :meth:`loopback_only` lists what left."""
        problem = missing()
        if problem:
            raise RuntimeError(problem)
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        exe, driver = executables()
        self.profile = tempfile.mkdtemp(prefix="arithmech-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = exe
        flags = [f for f in FLAGS if not (loopback and f.startswith(("--proxy-bypass-list", "--host-resolver-rules")))]
        if loopback:
            flags += ["--proxy-bypass-list=127.0.0.1", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
        for flag in (*flags, f"--user-data-dir={self.profile}"):
            opts.add_argument(flag)
        opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        opts.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": False})
        # Chromium's scratch files go away with the profile.
        service = Service(executable_path=driver, env={**os.environ, "TMPDIR": self.profile})
        try:
            self.driver = webdriver.Chrome(options=opts, service=service)
            self.driver.execute_cdp_cmd("Network.enable", {})
            self.driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
                "offline": not loopback, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        except Exception:
            self.driver = None
            self.close()
            raise

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if getattr(self, "driver", None) is not None:
            self.driver.quit()
            self.driver = None
        shutil.rmtree(self.profile, ignore_errors=True)

    def _record(self, rep: PageReport) -> None:
        """Move what the logs hold since the last call into ``rep`` (network requests and failures from
        the performance log, SEVERE entries of the browser log: console errors, exceptions)."""
        for entry in self.driver.get_log("performance"):
            m = json.loads(entry["message"])["message"]
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Network.requestWillBeSent":
                u = p["request"]["url"]
                if not u.startswith(LOCAL_SCHEMES):
                    rep.requests.append(u)
            elif meth == "Network.loadingFailed" and not p.get("canceled"):
                rep.errors.append(f"load failed: {p.get('errorText')}")
        for entry in self.driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                rep.errors.append(f"{entry.get('source', 'console')}: {entry['message']}")

    def open(self, path: str | Path, settle: float = 20.0, screenshot: str | Path | None = None) -> PageReport:
        """Load ``path`` from ``file://``, wait until every chart is drawn (or ``settle`` s), report."""
        url = Path(path).resolve().as_uri()
        rep = PageReport(url)
        self.driver.get("about:blank")
        self._record(PageReport("about:blank"))               # drop what the previous page left behind
        self.driver.set_page_load_timeout(settle)
        from selenium.common.exceptions import TimeoutException
        try:
            self.driver.get(url)                              # returns after the load event
        except TimeoutException:
            rep.errors.append(f"page did not finish loading within {settle} s")
        deadline = time.time() + settle
        while time.time() < deadline:
            c = rep.counts = self.driver.execute_script(COUNT_JS)
            if c["drawn"] == c["charts"] and (c["math"] == 0 or c["mathjax"] > 0) and (not c["live"] or c["live_ready"]):
                break
            time.sleep(0.25)
        time.sleep(0.5)                                       # let late requests or errors surface
        rep.counts = self.driver.execute_script(COUNT_JS)
        self._record(rep)
        if screenshot:                                         # the whole page, in 2000 px slices
            import base64
            size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
            out = Path(screenshot)
            for k, y in enumerate(range(0, int(min(size["height"], 20000)), 2000)):
                shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
                    "format": "png", "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": y, "width": size["width"], "height": 2000, "scale": 1}})
                out.with_name(f"{out.stem}-{k}{out.suffix}").write_bytes(base64.b64decode(shot["data"]))
        return rep

    def loopback_only(self, port: int) -> list[str]:
        """The requests since the last call that went anywhere but ``127.0.0.1:<port>`` or a local scheme."""
        rep = PageReport("loopback")
        self._record(rep)
        return [u for u in rep.requests if not u.startswith((f"http://127.0.0.1:{port}/", f"ws://127.0.0.1:{port}/"))]

    def live_problems(self, rep: PageReport, prompt: str = LIVE_PROMPT) -> list[str]:
        """On a page with the live explorer (``rep`` from :meth:`open`): what is wrong after typing ``prompt`` and
        pressing run (it did not load; the prompt is not shown as typed; no 5 top rows, head map or attention
        row; no answer in the status line). ``[]`` on a page without it, or when all is there."""
        if not rep.counts.get("live"):
            return []
        if not rep.counts.get("live_ready"):
            text = self.driver.execute_script("return document.getElementById('arithmech-live').textContent")
            return [f"live explorer did not load: {text.strip()[:160]}"]
        s = self.try_live(rep, prompt)
        problems = [f"live explorer shows {s['shown']!r}, not the typed prompt"] * (s["shown"] != prompt)
        problems += [f"live explorer: {s['top']} top rows, {s['cells']} head cells, {s['bars']} attention bars"] * (
            s["top"] != 5 or s["cells"] < 2 or not s["bars"])
        problems += [f"live explorer status: {s['status']!r}"] * ("next token" not in s["status"])
        return problems

    def try_live(self, rep: PageReport, prompt: str) -> dict:
        """Type ``prompt`` into the page's live explorer, press run, and return what it shows (:data:`LIVE_JS`);
        console errors it logs go to ``rep``."""
        from selenium.webdriver.common.by import By
        box = self.driver.find_element(By.CLASS_NAME, "arithmech-live-prompt")
        box.clear()
        box.send_keys(prompt)
        self.driver.find_element(By.CLASS_NAME, "arithmech-live-run").click()
        time.sleep(0.3)
        state = self.driver.execute_script(LIVE_JS)
        self._record(rep)
        return state


if __name__ == "__main__":
    problem = missing()
    if problem:
        print(problem, file=sys.stderr)
        sys.exit(1)
