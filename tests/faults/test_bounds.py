"""Every size past its bound is refused at once: one line naming the flag (or the file) and the
bound, exit 2, before torch (let alone a model) loads, in seconds and little memory, and nothing written.

The cases are read from the bounds themselves, so a new bound is covered without a new test: every option with
a ``high`` of every command's config (:data:`arithmech.cli.COMMANDS`, the wings' configs), plus the
bounds a config's ``check`` or the pair-file reader states in code (:data:`CHECKED`). Each command's cases run in
one subprocess (``arithmech.cli.main`` called once per case, its exit code and stderr caught), so the tier stays
at a few seconds a command; the probe records after each case whether torch was imported.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from arithmech.cli import COMMANDS
from arithmech.core.config import fields, flag
from arithmech.data import pairfile
from arithmech.pipeline import config_base

from .tools import REPO, snapshot

PROBE = """
import contextlib, io, json, sys, time
from arithmech.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    err, t0 = io.StringIO(), time.time()
    with contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as e:
            code = e.code
    out.append({"code": code, "err": err.getvalue(), "torch": "torch" in sys.modules, "s": time.time() - t0})
# the peak of this process's own memory (VmHWM: reset by exec; ru_maxrss keeps the forking parent's peak)
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
out.append({"rss_mb": int(hwm.split()[1]) / 1024})
print(json.dumps(out))
"""


def _past(high, kind):
    """A value just past ``high``: the next integer, or twice a positive float bound (0.5 past a negative one)."""
    if kind is int:
        return high + 1
    return float(high) * 2 if high > 0 else 0.5


def _option_cases() -> list[tuple[str, list[str], str]]:
    """(command, argv, the refusal's words) for every bounded option of every command."""
    cases = []
    for command, cmd in COMMANDS.items():
        for name, _default, meta, kind, _many in fields(cmd.config):
            if meta.get("high") is None:
                continue
            value = _past(meta["high"], kind)
            cases.append((command, [command, flag(name), str(value)], f"{flag(name)} {value!r} is above {meta['high']}"))
    return cases


one = {"clean": "{A} plus {B} is", "corrupt": "{A} and {B} is"}
PAIR_FILES = {       # a pair file past each of its limits (arithmech.data.pairfile), read by identify --task
    "bytes.json": (b" " * (pairfile.MAX_FILE_BYTES + 1), f"bytes; at most {pairfile.MAX_FILE_BYTES:,}"),
    "entries.json": (json.dumps([one] * (pairfile.MAX_PAIRS + 1)).encode(),
                     f"{pairfile.MAX_PAIRS + 1:,} pairs; at most {pairfile.MAX_PAIRS}"),
    "template.json": (json.dumps([{**one, "clean": "{A} plus {B} is " + "x" * pairfile.MAX_TEMPLATE_CHARS}]).encode(),
                      f"characters; at most {pairfile.MAX_TEMPLATE_CHARS}"),
    "nesting.json": (b"[" * 10_000 + b"]" * 10_000, f"nests JSON deeper than {pairfile.MAX_DEPTH} levels"),
}
# Bounds a config's check() or a reader states in code rather than as an option's high: (command, argv, words).
CHECKED = [("analyze", ["analyze", "--prompt", "4 + 3 = " * 300],
            f"--prompt has 2,400 characters; at most {config_base.MAX_PROMPT_CHARS:,}"),
           ("table1", ["table1", "--seeds", ",".join(map(str, range(config_base.MAX_SEEDS + 1)))],
            f"--seeds: {config_base.MAX_SEEDS + 1} seeds; at most {config_base.MAX_SEEDS}")]
CHECKED += [("identify", ["identify", "--task", f"PAIRS/{n}"], words) for n, (_, words) in PAIR_FILES.items()]
CASES = _option_cases() + CHECKED


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """Every case run by :data:`PROBE`, one subprocess per command, in an empty working folder with --results /
    --out inside it: (case id → the probe's row), the peak memory per command, and the folder afterwards."""
    root = tmp_path_factory.mktemp("bounds")
    pairs, work = root / "pairs", root / "work"
    pairs.mkdir()
    work.mkdir()
    for n, (data, _) in PAIR_FILES.items():
        (pairs / n).write_bytes(data)
    before = snapshot(root)
    rows, rss = {}, {}
    by_command: dict[str, list] = {}
    for i, (command, argv, _) in enumerate(CASES):
        argv = [a.replace("PAIRS", str(pairs)) for a in argv]
        names = {n for n, *_ in fields(COMMANDS[command].config)}
        extra = (["--results", str(work / "results")] if "results" in names else []) + \
                (["--out", str(work / "out")] if "out" in names else [])
        by_command.setdefault(command, []).append((i, argv + extra))
    for command, items in by_command.items():
        p = subprocess.run([sys.executable, "-c", PROBE, json.dumps([a for _, a in items])], capture_output=True,
                           text=True, timeout=120, cwd=work, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert p.returncode == 0, p.stderr[-2000:]
        got = json.loads(p.stdout.splitlines()[-1])
        rss[command] = got.pop()["rss_mb"]
        rows.update({i: row for (i, _), row in zip(items, got)})
    return rows, rss, before, snapshot(root)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[" ".join(a[:2] if a[1] != "--task" else a[::2]).replace("PAIRS/", "")
                                                           for _, a, _ in CASES])
def test_a_size_past_its_bound_is_refused_before_any_work(probed, case):
    """Protects the bounds (`identify --n-samples 1000000000000` once ran until killed, `--n-boot` ended in
    a traceback, a pair file nested 10,000 deep a RecursionError): each is one line on stderr naming the flag or
    file and the bound, exit 2, within seconds, before torch is imported (so before any model), and neither the
    working folder nor the results folder gets a file."""
    rows, rss, before, after = probed
    command, _, words = CASES[case]
    row = rows[case]
    err = row["err"]
    assert row["code"] == 2, row
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert words in err, (words, err)
    assert not row["torch"], "torch was imported before the refusal"
    assert row["s"] < 10, row
    assert rss[command] < 1024, rss                 # the whole probe of the command, all its cases: under 1 GB
    assert after == before                          # nothing written: no results, no checkpoints, no folder
