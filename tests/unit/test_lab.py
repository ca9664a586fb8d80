"""``make lab``'s launcher (arithmech.lab, its command line in arithmech.cli): where it listens, with what, and the
viewer it sets."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from arithmech import cli, lab


def test_command_listens_on_loopback_with_the_token():
    """Protects the lab's exposure: the server binds 127.0.0.1 with the given token, opens no browser, asks no
    extension index; an address, token or origin given after -- and a port outside 0-65535 (0: any free one) are refused before
    anything is written."""
    cmd = lab.command(8888, "abc123", Path("/repo"))
    assert "--ServerApp.ip=127.0.0.1" in cmd and "--IdentityProvider.token=abc123" in cmd
    assert "--ServerApp.open_browser=False" in cmd and "--LabApp.extension_manager=readonly" in cmd
    assert not [a for a in cmd if a.startswith("--ip")]
    for bad in (["--", "--ip=0.0.0.0"], ["--", "--NotebookApp.ip=0.0.0.0"], ["--", "--IdentityProvider.token="],
                ["--", "--ServerApp.allow_origin=*"], ["--port", "70000"], ["--port", "-1"]):
        try:
            cli.main(["lab", *bad])
        except SystemExit as e:
            assert e.code == 2, bad
        else:
            raise AssertionError(f"{bad} was accepted")


def test_overrides_make_markdown_open_as_a_notebook(tmp_path):
    """Protects the chapters-as-notebooks default: overrides.json gets jupytext's viewer for Markdown and MyST,
    and a setting already there is kept."""
    path = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}))
    assert lab.write_overrides(tmp_path) == path
    data = json.loads(path.read_text())
    assert data[lab.DOCMANAGER]["defaultViewers"] == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
    assert data["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}


def test_make_labs_command_is_the_clis_lab():
    """Protects `make lab`'s command line, `python -m arithmech.lab`: it is the CLI's `lab` command under another
    name, so a bad port is refused there too, in one line with exit code 2, before JupyterLab is looked for."""
    out = subprocess.run([sys.executable, "-m", "arithmech.lab", "--port", "70000"], capture_output=True, text=True)
    assert out.returncode == 2 and "error: argument --port: 70000: a port is 1 to 65535" in out.stderr, out.stderr
    assert "python -m arithmech lab --help" in out.stderr and out.stderr.count("\n") == 1
