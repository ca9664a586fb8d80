"""``make lab`` works: its command (``python -m arithmech.lab``) starts JupyterLab on a free 127.0.0.1 port with a
token; headless Chromium (loopback only: every other host goes to a dead proxy) opens the Analyze chapter
(``book/analyze.md``, which opens as a notebook: jupytext is its default viewer), sets ``interactive = True``
in its parameters cell, runs every cell on the embedded model, types a prompt into the explorer widget and
presses run; the top-5 table and the attention chart then show that prompt's, as PyTorch computes them.
The server and its kernel are stopped whatever happens; SIGTERM to ``make lab`` (``kill <pid>``) must stop both
within make lab's 30 s wait (the server exiting by itself), or the teardown fails. Marked ``slow``."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request  # noqa: F401 (used as urllib.request below, through the local import of urllib.error)
from pathlib import Path

import pytest
from browser import Browser, require_browser

from arithmech.core.models import load_model
from arithmech.identify import pipeline, run
from arithmech.methods.explorer import top_next

REPO = Path(__file__).resolve().parents[2]
PROMPT = "Q: What is 9 minus 5? A:"       # its tokens ("minus", "?") are none of the default prompt's
pytestmark = pytest.mark.slow

OPEN_JS = """const done = arguments[arguments.length - 1];
(async () => {
  const app = window.jupyterapp;
  await app.restored;
  const w = await app.commands.execute('docmanager:open', {path: 'book/analyze.md'});   // the default viewer
  await w.context.ready;
  await w.sessionContext.ready;
  const cells = Array.from(w.content.model.cells);
  const p = cells.find(c => c.sharedModel.getSource().includes('interactive = False'));
  p.sharedModel.setSource(p.sharedModel.getSource().replace('interactive = False', 'interactive = True')
                                                 .replace(/n_samples = \\d+/, 'n_samples = 16'));
  app.shell.activateById(w.id);
  await app.commands.execute('notebook:run-all-cells');
  done({factory: w.context.model.type || '', cells: cells.length, notebook: !!w.content.model.cells});
})().catch(e => done({error: String(e)}));"""

STATE_JS = """const inputs = Array.from(document.querySelectorAll('.widget-text input'));
const run = Array.from(document.querySelectorAll('button.jupyter-button')).find(b => b.textContent.trim() === 'run');
const out = run ? run.closest('.widget-vbox') : null;
const errors = Array.from(document.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
  .map(e => e.textContent).filter(t => /Error|Traceback/.test(t));
return {inputs: inputs.length, run: !!run, errors: errors.slice(0, 2),
        table: out ? Array.from(out.querySelectorAll('table td')).map(t => t.textContent.trim()).filter(t => t.endsWith('%')) : [],
        chart: out ? Array.from(out.querySelectorAll('.arithmech-chart svg text')).map(t => t.textContent) : []};"""


def _get(url: str) -> int:
    """The HTTP status of ``url`` (0: no answer)."""
    import urllib.error
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    import psutil
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """``(url, port)`` of a running ``python -m arithmech.lab`` on a copy of the chapter, with the embedded model's
    identify files (a small run); stopped (and its kernels) at the end, whatever happened."""
    require_browser()
    import psutil
    root = tmp_path_factory.mktemp("lab")
    for f in ("_toc.yml", "book/analyze.md", "book/book.yml"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, root / f)
    net, tok, _ = load_model("embedded")
    res = pipeline.identify(net, tok, "all", n_samples=16, seed=0, knockout=False, transfer=False, prob=False)
    run.write_results(res, root / "results" / "embedded", model_name="embedded")
    log = open(root / "lab.log", "w")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "JUPYTER_CONFIG_DIR": str(root / ".jupyter"), "JUPYTER_RUNTIME_DIR": str(root / ".runtime"),
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "arithmech.lab", "--port", "0", "--root", str(root), "--",
                             "--LabApp.expose_app_in_browser=True"], stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    try:
        deadline, url = time.time() + 120, None
        while time.time() < deadline and url is None:
            time.sleep(1)
            for line in (root / "lab.log").read_text().splitlines():
                if line.startswith("JupyterLab (pid") and "?token=" in line:
                    url = line.split(" on ", 1)[1].strip()
        assert url, (root / "lab.log").read_text()[-2000:]
        port = int(url.split(":")[2].split("/")[0])
        while time.time() < deadline and _get(f"http://127.0.0.1:{port}/api/status?token={url.split('token=')[1]}") != 200:
            time.sleep(1)
        yield url, port, root
    finally:
        family = [proc.pid] + [p.pid for p in psutil.Process(proc.pid).children(recursive=True)] \
            if psutil.pid_exists(proc.pid) else [proc.pid]
        proc.terminate()                           # `kill <pid>` of make lab: it stops the server, which stops its kernel
        try:
            stopped = proc.wait(timeout=45) == 0        # 0: the server exited by itself, not killed by make lab
        except subprocess.TimeoutExpired:
            stopped = False
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        left = [pid for pid in family[1:] if _running(pid)]
        for pid in family:                         # the kernel runs in a session of its own
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        log.close()
        assert stopped and not left, (f"make lab {'stopped' if stopped else 'did not stop'} cleanly after SIGTERM, "
                                      f"{len(left)} of its processes left: " + (root / "lab.log").read_text()[-2000:])


def test_analyze_widgets_in_jupyterlab(lab):
    """Protects `make lab`: the Analyze chapter opens as a notebook, runs with interactive=True on the embedded model,
    and its explorer widget answers a typed prompt: the top-5 table (prompt, intact) is PyTorch's top-5 for it and
    the attention chart's labels are its tokens; only 127.0.0.1 is contacted and the server needs the token."""
    from selenium.webdriver.common.by import By
    url, port, root = lab
    assert _get(f"http://127.0.0.1:{port}/api/contents") == 403        # no token, no answer
    net, tok, _ = load_model("embedded")
    top = top_next(net, tok, PROMPT)
    expected = [f"{t} {round(100 * p, 1)}%" for t, p in zip(top.token, top.prob)]
    with Browser(loopback=True) as b:
        d = b.driver
        d.set_script_timeout(120)
        d.get(url)
        for _ in range(120):
            if d.execute_script("return !!(window.jupyterapp && window.jupyterapp.started)"):
                break
            time.sleep(1)
        opened = d.execute_async_script(OPEN_JS)
        assert "error" not in opened and opened["notebook"], opened
        state = {}
        for _ in range(600):                     # every cell of the chapter runs (embedded model, 16 samples)
            state = d.execute_script(STATE_JS)
            assert not state["errors"], state["errors"]
            if state["run"] and state["inputs"] >= 2 and state["chart"]:
                break
            time.sleep(1)
        assert state["run"] and state["chart"], (state, (root / "lab.log").read_text()[-3000:])
        before = state
        boxes = d.find_elements(By.CSS_SELECTOR, ".widget-text input")
        boxes[0].clear()
        boxes[0].send_keys(PROMPT)
        boxes[1].clear()                          # no counterfactual: the explorer runs on the prompt alone
        next(e for e in d.find_elements(By.CSS_SELECTOR, "button.jupyter-button") if e.text.strip() == "run").click()
        for _ in range(120):
            state = d.execute_script(STATE_JS)
            if state["table"][:1] == expected[:1] and any("minus" in t for t in state["chart"]):
                break
            time.sleep(0.5)
        requests = b.loopback_only(port)
    shows = lambda chart, word: any(word in t for t in chart)
    assert not shows(before["chart"], "minus") and before["table"] != state["table"]
    assert state["table"][:5] == expected, (state["table"], expected)
    assert all(shows(state["chart"], w) for w in ("minus", "What", "9")), state["chart"]
    assert requests == [], requests
