"""Resume after an interruption: identify killed midway, a Table 1 run failing after its first arm,
and the fine-tune runner's temporary Trainer folder on failure.

A re-run with the same arguments continues from the checkpoints (identify: per task; Table 1: per arm) and
writes files byte-identical to an uninterrupted run (``run.json``'s and the records' timings aside).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from arithmech.cli import main
from arithmech.steps.config_training import Finetune
from arithmech.table1 import finetune

REPO = Path(__file__).resolve().parents[2]
# Identify on the embedded model, four tasks (the four operations), small sizes: ~3 s of work on one thread.
IDENTIFY = ["identify", "--model", "embedded", "--task", "all", "--n-samples", "12", "--knockout-samples", "8",
            "--n-random", "1", "--seed", "0"]
VOLATILE = {"wall_seconds", "timings", "peak_memory"}           # run.json: what may differ between two runs


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _run_record(raw: bytes) -> dict:
    run = json.loads(raw)
    for rec in run["steps"].values():
        for k in VOLATILE:
            rec.pop(k, None)
    return run


@pytest.mark.parametrize("unit", ["task-0.pt", "knockout-prompts-addition.pt"])
def test_identify_killed_midway_resumes_to_identical_files(tmp_path, capsys, unit):
    """Protects: identify killed (SIGKILL) after a checkpoint (its first task's patching; its first task's held-out
    knockout prompts, the slow draw on a real model) continues on a re-run with the same arguments (the saved
    unit is loaded, not recomputed), writes files byte-identical to an uninterrupted run (run.json's timings
    aside, which count the killed run's seconds of a resumed task) and removes its checkpoints; nothing final is
    written by the killed run."""
    killed, ref = tmp_path / "killed", tmp_path / "ref"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    p = subprocess.Popen([sys.executable, "-m", "arithmech", *IDENTIFY, "--results", str(killed)], cwd=tmp_path,
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ckdir = killed / "embedded" / ".checkpoints"
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None and not list(ckdir.glob(f"identify-*/{unit}")):
        time.sleep(0.005)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL, p.stderr.read().decode()[-2000:]
    units = sorted(x.name for x in ckdir.glob("identify-*/*.pt"))
    assert unit in units and not (killed / "embedded" / "effects.csv").exists()
    if unit == "task-0.pt":                      # the killed run's seconds travel with its unit: mark them
        path = next(ckdir.glob("identify-*/task-0.pt"))
        saved = torch.load(path, weights_only=True)
        assert set(saved["seconds"]) == {"prepare", "patching"}
        torch.save({**saved, "seconds": {"prepare": 1000.0, "patching": 2000.0}}, path)
    capsys.readouterr()
    main([*IDENTIFY, "--results", str(killed)])                     # the same command again: continues
    assert "identify: resumed" in capsys.readouterr().err
    if unit == "task-0.pt":                      # run.json counts the interrupted run's work, not only the last
        timings = json.loads((killed / "embedded" / "run.json").read_text())["steps"]["identify"]["timings"]
        assert timings["prepare"] >= 1000 and timings["patching"] >= 2000 and timings["total"] >= 3000
    assert not ckdir.exists()                                        # checkpoints removed after the final set
    main([*IDENTIFY, "--results", str(ref)])                         # uninterrupted
    a, b = _files(killed / "embedded"), _files(ref / "embedded")
    assert sorted(a) == sorted(b) == sorted(["answer_tokens.csv", "effects.csv", "effects_clusters.csv", "heldout.json", "key_heads.json",
                                             "knockout.csv", "prompts.jsonl", "run.json", "transfer.csv"])
    for name in a:
        if name == "run.json":
            assert _run_record(a[name]) == _run_record(b[name])
        else:
            assert a[name] == b[name], f"{name} differs after resume"


def test_identify_checkpoints_of_other_arguments_are_not_used(tmp_path):
    """Protects: checkpoints are keyed by the arguments: another seed or task count hashes to another folder,
    so a re-run with different arguments never picks up a stale task."""
    from arithmech.core import results
    a = results.checkpoints(tmp_path, "identify", {"task": "all", "seed": 0})
    b = results.checkpoints(tmp_path, "identify", {"seed": 0, "task": "all"})
    c = results.checkpoints(tmp_path, "identify", {"task": "all", "seed": 1})
    assert a.dir == b.dir != c.dir
    a.save("task-0", {"x": torch.arange(3), "rows": [{"k": 1.5}]})
    assert c.load("task-0") is None and a.load("task-0")["rows"] == [{"k": 1.5}]
    (a.dir / "task-1.pt").write_bytes(b"truncated")                  # a unit cut by a kill: recomputed
    assert a.load("task-1") is None and a.done() == ["task-0"]
    a.clear()
    assert not (tmp_path / ".checkpoints").exists()


# ----------------------------------------------------------------------------------------- Table 1
@pytest.fixture
def toy_model(tmp_path):
    """A random 2-layer Llama over the embedded model's tokenizer, saved as a model folder."""
    from factories import save_word_llama
    return save_word_llama(tmp_path / "toy")


def _small_eval(model, tok, sizes, seed=0, data_dir=None):
    """Table 1's measurements cut to two (no benchmark files needed): held-out phrasings and the LM loss."""
    from arithmech.core.stats import mean_interval, wilson_interval
    from arithmech.data import pairs
    from arithmech.evals import measures
    _, held = measures.phrasings()
    samples, _ = pairs.make_pairs(tok, held[:4], n=8, seed=seed + 3, draw=pairs.Draw("first", 0, 1))
    it = measures.answer_scores(model, tok, samples)[1].tolist()          # P({C}): sensitive to every weight
    losses = measures.lm_losses(model, tok, measures.generic_text(), max_tokens=96, window=32)
    out = {"heldout_p": {"metric": "p", "value": sum(it) / len(it), "n": len(it),
                         "ci": list(wilson_interval(0, len(it))), "items": it}}
    mean, lo, hi = mean_interval(losses)
    out["lm_loss"] = {"metric": "nats/token", "value": mean, "n": len(losses), "ci": [lo, hi], "items": losses}
    return out


TRAIN_VOLATILE = {"runtime_s", "samples_per_second", "trainer_samples_per_second", "peak_memory"}


def _record(path: Path) -> dict:
    rec = json.loads(path.read_text())
    rec.pop("wall_s")
    for k in TRAIN_VOLATILE:
        (rec.get("train") or {}).pop(k, None)
    return rec


# ------------------------------------------------------------------------------- Trainer temp folder
def test_failed_training_leaves_no_trainer_temp_folder(tmp_path, toy_model, monkeypatch):
    """Protects: the Trainer's output folder (arithmech-trainer-*) is removed when training fails, not only on
    success (it used to leak on every failure)."""
    import tempfile

    from arithmech.finetune import runner
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    seen = []

    def boom(trainer, device="cpu"):
        seen.append(Path(trainer.args.output_dir))
        assert seen[0].is_dir() and seen[0].parent == tmpdir
        raise RuntimeError("injected training failure")
    monkeypatch.setattr(runner, "train_measured", boom)
    with pytest.raises(RuntimeError, match="injected"):
        finetune.run(Finetune(model_name=toy_model, mode="full", results=str(tmp_path / "res"), benchmarks=["generic"],
                              max_steps=1, batch_size=4, micro_batch_size=4, lr=1e-3, n_train=8),
                     before={"generic": 0.5})
    assert seen and not list(tmpdir.glob("arithmech-trainer-*"))
