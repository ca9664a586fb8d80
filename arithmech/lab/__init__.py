"""``make lab`` (``python -m arithmech lab``, or ``python -m arithmech.lab``): JupyterLab on this repository, with the
chapters as notebooks.

* **Chapters open as notebooks.** ``book/<chapter>.md`` is a MyST-Markdown notebook; jupytext's JupyterLab
  extension reads it, and :func:`write_overrides` makes "Jupytext Notebook" the default viewer of Markdown
  files (``<venv>/share/jupyter/lab/settings/overrides.json``, the venv's own settings; nothing in ``~``).
  Saving writes the Markdown back (jupytext), without outputs.
* **Widgets and charts work.** ipywidgets' lab extension comes with ``ipywidgets`` (``jupyterlab_widgets``);
  the chapters' charts are vega-lite 6, which JupyterLab does not render itself, so the chapters' ``setup()``
  shows the book's own vega bundle once when ``ARITHMECH_LAB=1`` (set here for the kernels;
  :func:`arithmech.report.build.offline.jupyter_vega`).
* **Local and guarded.** The server listens on 127.0.0.1 only, with a fresh random token (printed with the
  address), and says how to stop it: Ctrl+C in this terminal, or ``kill <pid>`` (this command's or the
  server's); either way the server gets SIGTERM and stops its kernels (SIGINT would not do: a server started
  from a background job ignores it).

Run a chapter with its widgets: open ``book/analyze.md``, set ``interactive = True`` in its first code cell
(``model = "smollm2-135m"`` for SmolLM2), then Run > Run All Cells; the prompt explorer appears near the end.

The command line (``--port``, ``--root``, jupyter's own options after ``--``) is :mod:`arithmech.cli`'s ``lab``
command; it calls :func:`run`::

    >>> run(8888, Path("."), ["--ServerApp.shutdown_no_activity_timeout=600"])  # blocks until stopped
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

VIEWERS = {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
DOCMANAGER = "@jupyterlab/docmanager-extension:plugin"
FIXED = ("ip", "token", "allow_origin", "allow_remote_access", "password")  # jupyter options no caller may set


def write_overrides(prefix: str | Path = sys.prefix) -> Path:
    """Make jupytext's notebook the default viewer of Markdown in this environment's JupyterLab (other
    settings in the file are kept). Returns the file."""
    path = Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    plugin = data.setdefault(DOCMANAGER, {})
    if plugin.get("defaultViewers", {}) != {**plugin.get("defaultViewers", {}), **VIEWERS} or not path.exists():
        plugin["defaultViewers"] = {**plugin.get("defaultViewers", {}), **VIEWERS}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def free_port(wanted: int) -> int:
    """``wanted`` when it is free on 127.0.0.1, else any free port (0: any free port)."""
    for port in ([wanted] if wanted else []) + [0]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise OSError("no free port on 127.0.0.1")


def command(port: int, token: str, root: Path, extra: Sequence[str] = ()) -> list[str]:
    """The ``jupyter lab`` command line: 127.0.0.1 only, this token, no browser opened, ``root`` as its folder, the
    extension manager read-only (it lists what is installed and asks no index); as root (a container), allowed."""
    return [
        sys.executable,
        "-m",
        "jupyterlab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.answer_yes=True",
        "--LabApp.extension_manager=readonly",  # no queries to PyPI for extensions
        *(["--ServerApp.allow_root=True"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        *extra,
    ]


def _interrupted(signum: int, frame: object) -> None:
    """SIGTERM handler: raise KeyboardInterrupt, so ``kill`` stops the server and its kernels as Ctrl+C does."""
    raise KeyboardInterrupt


def run(port: int, root: Path, extra: Sequence[str] = ()) -> int:
    """Start JupyterLab on 127.0.0.1 at ``port`` (or a free one) showing ``root``, with ``extra`` passed on to it;
    wait until it stops (Ctrl+C, or SIGTERM to this process) and return its exit code. ``extra`` may not set
    the address, the token or the origins (a ``ValueError`` before anything is written)."""
    if any(a.lstrip("-").split("=")[0].lower().rsplit(".", 1)[-1] in FIXED for a in extra):
        raise ValueError(
            "the address (127.0.0.1), the token and the origins are fixed; pass other jupyter options only"
        )
    try:
        import jupyterlab  # noqa: F401
        import jupytext  # noqa: F401
    except ImportError as e:
        print(f"make lab: {e.name} is missing: run `make setup` (it installs requirements.txt)", file=sys.stderr)
        return 1
    write_overrides()
    port, token, root = free_port(port), secrets.token_hex(24), root.resolve()
    env = {**os.environ, "ARITHMECH_LAB": "1"}
    proc = subprocess.Popen(command(port, token, root, extra), env=env)
    signal.signal(signal.SIGTERM, _interrupted)  # `kill <this pid>` stops the server as Ctrl+C does
    print(
        f"\nJupyterLab (pid {proc.pid}) on http://127.0.0.1:{port}/lab?token={token}\n"
        f"  only this machine can reach it (127.0.0.1), and only with the token above.\n"
        f"  Open book/<chapter>.md: it opens as a notebook. Widgets: book/analyze.md with interactive = True.\n"
        f"  Stop it: Ctrl+C here, or `kill {proc.pid}` from another terminal.\n",
        flush=True,
    )
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGTERM)  # the server's own clean stop (its kernels too); SIGINT is ignored
        # by a server started from a background job, SIGTERM never is
        try:
            return proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()
