"""Open a built page in headless Chromium with all network cut, and report what happened.

A small Chrome DevTools Protocol client (``websocket-client``): Chromium starts with a fresh
profile, every background service off, a dead proxy and a host resolver that resolves nothing,
and the page's network emulated offline. Through the protocol we record every request the page
makes (any scheme but ``file:``, ``data:``, ``blob:``, ``about:`` counts as leaving the machine),
every console error and uncaught exception, and count the charts vega-embed drew.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome:", "devtools:")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
         "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--allow-file-access-from-files",
         "--window-size=1280,2000", "--remote-debugging-port=0", "about:blank"]

# JS evaluated in the page: chart containers written by arithmech.report.offline.chart_html, the
# ones vega-embed has drawn into (an svg.marks or a canvas), and MathJax's output.
COUNT_JS = """JSON.stringify({
  charts: document.querySelectorAll('.arithmech-chart').length,
  drawn: Array.from(document.querySelectorAll('.arithmech-chart'))
              .filter(d => d.querySelector('svg.marks, canvas')).length,
  marks: document.querySelectorAll('svg.marks').length + document.querySelectorAll('canvas').length,
  math: document.querySelectorAll('span.math, div.math').length,
  mathjax: document.querySelectorAll('mjx-container').length,
  text: document.body ? document.body.innerText.length : 0
})"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@dataclass
class PageReport:
    url: str
    counts: dict = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)     # non-local requests: must stay empty
    errors: list[str] = field(default_factory=list)       # console errors, exceptions, failed loads


class Browser:
    """``with Browser() as b: report = b.open(path)``; one Chromium for many pages."""

    def __init__(self) -> None:
        exe = chromium()
        if exe is None:
            raise RuntimeError("Chromium is not installed: apt-get install -y chromium")
        self.profile = tempfile.mkdtemp(prefix="arithmech-chromium-")
        env = {**os.environ, "TMPDIR": self.profile}          # its scratch files go away with the profile
        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={self.profile}"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self.profile) / "DevToolsActivePort"
        for _ in range(300):
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.1)
        else:
            self.close()
            raise RuntimeError("Chromium did not open its DevTools port within 30 s")
        self.port = int(port_file.read_text().split()[0])

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _new_tab(self) -> tuple[str, str]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(req, timeout=10) as r:
            info = json.load(r)
        return info["id"], info["webSocketDebuggerUrl"]

    def _close_tab(self, tab: str) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/close/{tab}", timeout=10):
            pass

    def open(self, path: str | Path, settle: float = 20.0, screenshot: str | Path | None = None) -> PageReport:
        """Load ``path`` from ``file://``, wait until every chart is drawn (or ``settle`` s), report."""
        import websocket

        url = Path(path).resolve().as_uri()
        rep = PageReport(url)
        tab, ws_url = self._new_tab()
        ws = websocket.create_connection(ws_url, timeout=settle, suppress_origin=True)
        msg_id = 0
        loaded = False

        def on_event(m: dict) -> None:
            nonlocal loaded
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Network.requestWillBeSent":
                u = p["request"]["url"]
                if not u.startswith(LOCAL_SCHEMES):
                    rep.requests.append(u)
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                rep.errors.append("console: " + " ".join(str(a.get("value", a.get("description", "")))
                                                         for a in p.get("args", [])))
            elif meth == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                rep.errors.append("exception: " + (d.get("exception", {}).get("description") or d.get("text", "")))
            elif meth == "Log.entryAdded" and p["entry"]["level"] == "error":
                rep.errors.append(f"log: {p['entry']['text']} {p['entry'].get('url', '')}")
            elif meth == "Network.loadingFailed" and not p.get("canceled"):
                rep.errors.append(f"load failed: {p.get('errorText')}")
            elif meth == "Page.loadEventFired":
                loaded = True

        def call(method: str, **params) -> dict:
            nonlocal msg_id
            msg_id += 1
            ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
            while True:
                m = json.loads(ws.recv())
                if m.get("id") == msg_id:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return m.get("result", {})
                on_event(m)

        try:
            for domain in ("Network", "Runtime", "Log", "Page"):
                call(f"{domain}.enable")
            call("Network.emulateNetworkConditions", offline=True, latency=0, downloadThroughput=-1,
                 uploadThroughput=-1)
            call("Page.navigate", url=url)
            deadline = time.time() + settle
            while time.time() < deadline:
                if loaded:
                    r = call("Runtime.evaluate", expression=COUNT_JS, returnByValue=True)
                    rep.counts = json.loads(r["result"]["value"])
                    c = rep.counts
                    if c["drawn"] == c["charts"] and (c["math"] == 0 or c["mathjax"] > 0):
                        break
                ws.settimeout(0.25)
                try:
                    on_event(json.loads(ws.recv()))
                except websocket.WebSocketTimeoutException:
                    pass
                ws.settimeout(settle)
            time.sleep(0.5)                      # let late requests or errors surface
            r = call("Runtime.evaluate", expression=COUNT_JS, returnByValue=True)
            rep.counts = json.loads(r["result"]["value"])
            if screenshot:
                import base64
                size = call("Page.getLayoutMetrics")["cssContentSize"]     # the whole page, in 2000 px slices
                for k, y in enumerate(range(0, int(min(size["height"], 20000)), 2000)):
                    shot = call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                                clip={"x": 0, "y": y, "width": size["width"], "height": 2000, "scale": 1})
                    out = Path(screenshot)
                    out.with_name(f"{out.stem}-{k}{out.suffix}").write_bytes(base64.b64decode(shot["data"]))
        finally:
            ws.close()
            self._close_tab(tab)
        return rep
