"""The CLI's input contract end to end: nothing outside a command's output is touched, a failed run
leaves the folder exactly as it was, random argument combinations are accepted or refused with one line and
exit 2, and a bad ``--task`` is refused before torch is even imported."""
from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arithmech.cli import main

REPO = Path(__file__).resolve().parents[2]


def _snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: relative path → (sha256, mtime in ns)."""
    return {p.relative_to(folder).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _exit_2(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


def test_commands_touch_nothing_outside_their_output_and_failures_touch_nothing(tmp_path, capsys, monkeypatch):
    """Protects: identify and finetune on the embedded model write only into results/embedded/ (sentinel files in
    the results root and in a sibling folder keep their bytes and mtimes; no checkpoint, temporary or Trainer
    folder is left); and failed runs (bad --heads, top-0, an unknown task, identify again without --overwrite)
    leave the whole tree exactly as before (file list, hashes, mtimes)."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    root, sibling = tmp_path / "results", tmp_path / "sibling"
    for d in (root, sibling):
        d.mkdir()
        (d / "SENTINEL.txt").write_text("not yours\n")
        os.utime(d / "SENTINEL.txt", ns=(1_000_000_000, 1_000_000_000))
    outside = lambda: {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith("results/embedded/")}
    before = outside()
    main(["identify", "--model", "embedded", "--results", str(root), "--task", "addition", "--n-samples", "8",
          "--knockout-samples", "4", "--n-random", "1", "--no-prob"])
    main(["finetune", "--model", "embedded", "--results", str(root), "--heads", "top-2", "--mode", "precise",
          "--max-steps", "1", "--batch-size", "4", "--micro-batch-size", "4", "--n-train", "8", "--limit", "4",
          "--benchmarks", "single_digit"])
    capsys.readouterr()
    assert outside() == before
    assert sorted(_snapshot(root / "embedded")) == sorted(
        ["answer_tokens.csv", "effects.csv", "effects_clusters.csv", "finetune/precise.json", "heldout.json", "key_heads.json",
         "knockout.csv", "prompts.jsonl", "run.json", "transfer.csv"])
    assert not list((tmp_path / "tmp").glob("arithmech-*"))         # no Trainer folder left (torch's caches may be)
    assert not [p for p in root.rglob("*") if p.name.startswith(".")]   # no checkpoint or temporary folder
    whole = _snapshot(tmp_path)
    for argv in (["finetune", "--model", "embedded", "--results", str(root), "--heads", "1.2.3", "--tag", "x"],
                 ["finetune", "--model", "embedded", "--results", str(root), "--heads", "top-0", "--tag", "x"],
                 ["finetune", "--model", "embedded", "--results", str(root), "--heads", "top-2"],   # exists
                 ["identify", "--model", "embedded", "--results", str(root), "--task", "nosuch"],
                 ["identify", "--model", "embedded", "--results", str(root), "--task", "addition"]):
        _exit_2(argv, capsys)
        assert _snapshot(tmp_path) == whole, argv


def test_bad_task_refused_before_torch_loads_in_under_2_s(tmp_path):
    """Protects: ``identify --task`` with a malformed pair file or an unknown task name fails with exit 2 and one
    line in under 2 s (it used to take 4.3 s, importing torch first), and no results folder is created."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"pairs": [')
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for task in (str(bad), "nosuch"):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "arithmech", "identify", "--task", task, "--results",
                            str(tmp_path / "res")], capture_output=True, text=True, env=env, cwd=tmp_path)
        took = time.perf_counter() - t0
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        assert took < 2.0, f"--task {task}: {took:.2f} s"
    assert not (tmp_path / "res").exists()


# --------------------------------------------------------------------------------------------- fuzz
class Reached(Exception):
    """Raised instead of loading a model: the arguments were accepted."""


VALUES = {
    "--model": ["embedded", "embedded", "nosuch-model", ".", "missing.gguf", "org/name"],
    "--seed": ["0", "3", "-1", "1.5", "x"],
    "--device": ["cpu", "cpu", "cuda", "tpu"],
    "--dtype": ["float32", "bfloat16", "fp8"],
    "--n-samples": ["8", "1", "0", "-4", "many"],
}
PER_COMMAND = {
    "identify": {"--task": ["addition", "all", "fig8", "nosuch", "BAD_FILE", "GOOD_FILE", ""],
                 "--threshold": ["-0.05", "0.1", "x"], "--share-threshold": ["-0.05", "0.2", "x"], "--method": ["fast", "reference", "slow"],
                 "--knockout-samples": ["8", "0", "-1"], "--n-random": ["1", "0"], "--batch-size": ["16", "0"],
                 "--knockout-positions": ["end", "all", "some"], "--curves-for": ["primary", "each", "none"]},
    "analyze": {"--prompt": ["4 + 3 =", ""], "--no-final-norm": [None]},
    "finetune": {"--heads": ["top-2", "0.1,1.2", "top-0", "1.2.3", "99.0", ""], "--mlps": ["0", "1", "-1", "99"],
                 "--mode": ["precise", "full", "lora"], "--batch-size": ["8", "0", "6"],
                 "--micro-batch-size": ["4", "0"], "--lr": ["1e-3", "0", "-1", "nan"], "--max-steps": ["1", "0"],
                 "--benchmarks": ["toy", "generic", "nope"], "--train-data": ["embedded", "nope.jsonl"]},
    "beyond": {"--receivers": ["2", "0", "x"], "--ig-steps": ["2", "0"], "--n-misses": ["1", "-1"]},
}


@pytest.fixture
def fuzz_results(tmp_path):
    """A results root whose embedded/ folder holds a small identify set (key heads + effects + prompts)."""
    main(["identify", "--model", "embedded", "--results", str(tmp_path / "res"), "--task", "addition",
          "--n-samples", "64", "--no-knockout", "--no-prob"])   # 64: enough for a key head (interval rule)
    return tmp_path / "res"


def test_fuzz_cli_arguments_reach_the_model_or_exit_2(tmp_path, fuzz_results, capsys, monkeypatch):
    """Protects: 100 seeded random argument combinations for identify / analyze / finetune / beyond: each either
    gets as far as loading the model (arguments accepted; loading is replaced by a sentinel exception) or exits
    with code 2 and one line on stderr, no traceback; all within seconds. Both outcomes occur."""
    import arithmech.core.models as models
    from arithmech.analyze import run as analyze
    from arithmech.circuits import beyond
    from arithmech.identify import run as identify
    from arithmech.table1 import finetune

    def reached(*_a, **_k):
        raise Reached
    for module in (models, identify, analyze, beyond, finetune):     # each step imports load_model at its top
        monkeypatch.setattr(module, "load_model", reached)
    files = {"BAD_FILE": tmp_path / "bad.json", "GOOD_FILE": tmp_path / "good.json"}
    files["BAD_FILE"].write_text('[{"clean": "{A} plus {B} is"}]')
    files["GOOD_FILE"].write_text('[{"clean": "{A} plus {B} is", "corrupt": "{A} nothing {B} is", "op": "addition"}]')
    rng = random.Random(17)
    counts = {"accepted": 0, "refused": 0}
    t0 = time.perf_counter()
    for i in range(100):
        cmd = rng.choice(list(PER_COMMAND))
        pool = {**VALUES, **PER_COMMAND[cmd]}
        argv = [cmd, "--results", str(fuzz_results if rng.random() < 0.8 else tmp_path / f"fresh{i}")]
        for flag in rng.sample(sorted(pool), rng.randint(1, 5)):
            v = rng.choice(pool[flag])
            argv += [flag] if v is None else [flag, str(files.get(v, v))]
        if cmd in ("identify", "analyze", "beyond"):
            argv.append("--overwrite")
        if cmd == "finetune":
            argv += ["--tag", f"t{i}"]
        try:
            main(argv)
        except Reached:
            counts["accepted"] += 1
            capsys.readouterr()
            continue
        except SystemExit as e:
            err = capsys.readouterr().err
            assert e.code == 2, (argv, err)
            assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, (argv, err)
            counts["refused"] += 1
            continue
        pytest.fail(f"{argv} neither reached the model nor exited")
    took = time.perf_counter() - t0
    assert counts["accepted"] >= 10 and counts["refused"] >= 30, counts
    assert took < 60, took
    print(f"fuzz: {counts} in {took:.1f} s")
