"""The fault tier's helpers: run the command line in a subprocess with a timeout, assert the one-line refusal,
and snapshot a folder without opening anything but its regular files."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def snapshot(folder: Path) -> dict[str, object]:
    """Everything under ``folder`` without opening anything but regular files: relative path → the bytes of a
    regular file, ``("link", target)`` for a symlink, the kind for anything else (a FIFO, a folder)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st = os.lstat(p)
        key = p.relative_to(folder).as_posix()
        if stat.S_ISLNK(st.st_mode):
            out[key] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            out[key] = p.read_bytes()
        else:
            out[key] = stat.S_IFMT(st.st_mode)
    return out


def cli(*argv: str, timeout: float = 90) -> subprocess.CompletedProcess:
    """``python -m arithmech *argv`` from the repository root, killed after ``timeout`` seconds."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "arithmech", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)


def refused(p: subprocess.CompletedProcess, *needles: str) -> str:
    """Assert the one-line refusal: exit code 2, stderr one line starting with ``error:`` holding ``needles``."""
    err = p.stderr
    assert p.returncode == 2, (p.returncode, err[-2000:])
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)
    return err
