"""Behaviour unchanged, proved: the embedded chain's results files before and after a change, byte for byte.

    python benchmarks/byte_identity.py --before REV               # REV against this working tree
    python benchmarks/byte_identity.py --before REV --after REV2  # two commits
    python benchmarks/byte_identity.py --before HEAD              # the check of the check: must say identical

Each side runs the same commands (:data:`CHAIN`: identify, analyze, beyond, faithfulness and the toy Table 1 on
``--model embedded``, small sizes, seed 0) with this script's interpreter, in its own code: a revision is checked
out into a temporary ``git worktree add --detach``; the working tree (``--after`` left out) is this checkout
itself. Both sides write into the same temporary path (moved aside after each side), so the paths a file quotes
(``--results`` in the records' ``command``) are the same on both sides; each side has its own empty
``ARITHMECH_CACHE`` (the reference-pool cache is keyed by its inputs, not by the code: a pool one side cached must
not be read back by the other). About 110 s a side on one thread of a 2-core machine.

Then the two results trees must hold the same relative paths, and every file must be byte-identical, with one
exception: a JSON file that holds a key of :data:`EXCLUDED` (the timings, measured on the machine, never a result)
is compared as its parsed value, keys in order, those keys removed; and ``run.json``'s sha256 of such a file (a
step records the hash of each file it writes) is left out with them, the file itself being compared. CSV, JSONL
and the rest: byte for byte. Which keys differ between two runs of one revision is what ``--before HEAD`` shows
(they are listed in :data:`EXCLUDED`, each with the reason).

Writes ``benchmarks/results/byte_identity.json`` (the revisions, the commands, the files compared, the excluded
keys, the differing files and ``identical``); exits 1 when the trees differ. The worktrees and the temporary
folder are removed on the way out, on error too; nothing else is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "byte_identity.json"
COMMON = ("--model", "embedded", "--seed", "0")
CHAIN = (  # the cheapest run of each step that still finds key heads, ranks, trains and decides
    "identify --task all --n-samples 64 --knockout-samples 32 --n-random 2 --n-boot 200",
    "analyze --n-samples 32",
    "beyond --n-samples 16 --ig-steps 2 --receivers 2",
    "faithfulness --n-samples 16 --n-max 4 --n-random 20",
    "table1 --suite toy --seeds 0 --draws 1 --frontier-seeds 1 --max-extend 0 --batch-size 8 --steps 2",
)
# The keys two runs of one revision disagree on (``--before HEAD``), wherever they appear: each holds seconds or
# bytes measured on this machine while the step ran, never a number of the results. Matched by name at any depth;
# no result of the chain uses these names (``estimate.peak_bytes``, the memory *estimate*, is a result: kept).
EXCLUDED = {
    "wall_seconds": "identify's seconds (run.json)",
    "wall_s": "a step's seconds (run.json), a fine-tune record's seconds (finetune/*.json)",
    "timings": "identify's and faithfulness's seconds by phase (run.json)",
    "times": "beyond's seconds by phase (run.json: summary.times)",
    "eval_s": "a fine-tune record's evaluation seconds (finetune/*.json: parameters.eval_s)",
    "runtime_s": "a fine-tune record's training seconds (train.runtime_s)",
    "samples_per_second": "training throughput, rows per second (train.samples_per_second)",
    "trainer_samples_per_second": "the same as the Trainer counts it (train.trainer_samples_per_second)",
    "run_s": "Table 1's seconds per run (finetune/table1.json and run.json: cost.run_s)",
    "total_s": "Table 1's seconds in all (cost.total_s)",
    "peak_memory": "the peak memory measured while a step ran or trained (run.json, finetune/*.json: train)",
}


def worktree(rev: str, where: Path) -> None:
    """A detached checkout of ``rev`` at ``where`` (removed by :func:`remove_worktree`)."""
    subprocess.run(["git", "worktree", "add", "--detach", str(where), rev], cwd=ROOT, check=True, capture_output=True)


def remove_worktree(where: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, capture_output=True)


def revision(rev: str | None) -> str:
    """The commit ``rev`` names; the working tree: ``HEAD`` and the paths it changes (at most ten named)."""
    got = subprocess.run(["git", "rev-parse", "--verify", f"{rev or 'HEAD'}^{{commit}}"], cwd=ROOT, capture_output=True)
    if got.returncode:
        sys.exit(f"error: not a revision of this repository: {rev!r}")
    head = got.stdout.decode().strip()
    if rev:
        return head
    changed = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    paths = [line[3:] for line in changed.splitlines()]
    more = f" and {len(paths) - 10} more" if len(paths) > 10 else ""
    return f"working tree at {head}" + (f", changed: {', '.join(paths[:10])}{more}" if paths else "")


def run_chain(code: Path, results: Path, cache: Path) -> list[str]:
    """Run :data:`CHAIN` with the code of ``code`` into ``results``; the commands, as run. ``cache`` is the side's
    own empty ``ARITHMECH_CACHE``: a reference pool cached by one side is never read by the other."""
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "ARITHMECH_CACHE": str(cache),
    }
    imported = subprocess.run(
        [sys.executable, "-c", "import arithmech; print(arithmech.__file__)"],
        cwd=code,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert Path(imported).resolve().is_relative_to(code.resolve()), f"{code} imports arithmech from {imported}"
    commands = []
    for line in CHAIN:
        step, *args = line.split()
        cmd = ["-m", "arithmech", step, *COMMON, "--results", str(results), *args]
        done = subprocess.run([sys.executable, *cmd], cwd=code, env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{step} failed in {code}:\n{done.stderr[-3000:]}")
        commands.append(" ".join(["python", *cmd]).replace(str(results), "<tmp>/results"))
    return commands


def strip(value):
    """``value`` (parsed JSON) without the keys of :data:`EXCLUDED`, at any depth."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in EXCLUDED}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def timed(path: Path) -> bool:
    """``path`` is a JSON file holding a key of :data:`EXCLUDED` (its bytes move with the timings)."""
    if path.suffix != ".json" or not path.is_file():
        return False
    value = json.loads(path.read_bytes())
    return json.dumps(strip(value)) != json.dumps(value)


def strip_hashes(run: dict, folder: Path, dropped: set[str]) -> dict:
    """``run.json`` (parsed) without the sha256 it records (``steps.<step>.files`` / ``.inputs``) of a file of
    ``folder`` that holds timings: that hash moves with them; the file itself is compared, timings aside."""
    for step, rec in run.get("steps", {}).items():
        for table in ("files", "inputs"):
            for name in [n for n in rec.get(table) or {} if timed(folder / n)]:
                del rec[table][name]
                dropped.add(f"{folder.name}/run.json: steps.{step}.{table}.{name}")
    return run


def differing_keys(a, b, at: str = "") -> list[str]:
    """Where two parsed JSON values differ, as key paths (for the report: which field moved)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in dict.fromkeys([*a, *b]) for p in differing_keys(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in differing_keys(x, y, f"{at}[{i}]")]
    return [] if json.dumps(a) == json.dumps(b) else [at or "."]


def compare(before: Path, after: Path) -> tuple[int, list[dict], list[str]]:
    """The number of files compared, those that differ (with the JSON key paths that differ) and the recorded
    hashes left out (:func:`strip_hashes`)."""
    files = {p.relative_to(before).as_posix() for p in before.rglob("*") if p.is_file()}
    others = {p.relative_to(after).as_posix() for p in after.rglob("*") if p.is_file()}
    differ = [{"file": f, "only_in": "before" if f in files else "after"} for f in sorted(files ^ others)]
    dropped: set[str] = set()
    for name in sorted(files & others):
        a, b = (before / name).read_bytes(), (after / name).read_bytes()
        if a == b:
            continue
        if not name.endswith(".json"):
            differ.append({"file": name})
            continue
        x, y = strip(json.loads(a)), strip(json.loads(b))
        if Path(name).name == "run.json":
            x = strip_hashes(x, (before / name).parent, dropped)
            y = strip_hashes(y, (after / name).parent, dropped)
        if json.dumps(x) != json.dumps(y):
            differ.append({"file": name, "keys": differing_keys(x, y)[:20]})
    return len(files | others), differ, sorted(dropped)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="the revision before the change")
    ap.add_argument("--after", default=None, help="the revision after it (default: this working tree)")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill cleans up too (the finally below)
    t0 = time.perf_counter()
    revisions = {"before": revision(a.before), "after": revision(a.after)}  # an unknown revision stops here
    tmp = Path(tempfile.mkdtemp(prefix="byte-identity-"))
    trees: list[Path] = []
    commands, seconds = {}, {}
    try:
        results = tmp / "results"
        for side, rev in (("before", a.before), ("after", a.after)):
            code = ROOT if rev is None else tmp / f"{side}-tree"
            if rev is not None:
                trees.append(code)
                worktree(rev, code)
            t = time.perf_counter()
            commands[side] = run_chain(code, results, tmp / f"{side}-cache")
            seconds[side] = round(time.perf_counter() - t, 1)
            results.rename(tmp / side)
        n, differ, hashes = compare(tmp / "before", tmp / "after")
    finally:
        for tree in trees:
            remove_worktree(tree)
        shutil.rmtree(tmp, ignore_errors=True)
    got = {
        **revisions,
        "commands": commands["after"],
        "files_compared": n,
        "excluded_keys": EXCLUDED,
        "excluded_hashes": hashes,
        "differing_files": differ,
        "identical": not differ,
        "chain_s": seconds,
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    Path(a.out).write_text(json.dumps(got, indent=1) + "\n")
    print(json.dumps(got, indent=1))
    return 0 if got["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
