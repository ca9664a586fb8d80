"""Unit tests of ``arithmech/core/estimate.py``: the memory model's arithmetic against independent counts, and the
refusal of a run that cannot fit (one line, exit 2, before any model loads)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from factories import make_biased_gqa_llama, make_tiny_llama

from arithmech.analyze import config as analyze_config
from arithmech.circuits import config as circuits_config
from arithmech.core import admission, estimate
from arithmech.identify import config as identify_config
from arithmech.prompts import config as prompts_config
from arithmech.steps import config_training

REPO = Path(__file__).resolve().parents[3]


def test_parameter_count_equals_sum_of_numel():
    """Protects: the weights term counts what the model holds: :meth:`Shape.params` from the config alone equals
    ``sum(p.numel())`` of the built model, with GQA and head_dim != d/H, with every bias on, and for the shipped
    embedded model (its config.json against its safetensors: half the file's bytes at float16)."""
    for model in (make_tiny_llama(), make_biased_gqa_llama(vocab=50)):
        cfg = model.config.to_dict()
        assert estimate.Shape.from_config(cfg).params == sum(p.numel() for p in model.parameters())
    emb = estimate.shape_of("embedded")
    assert emb.params == pytest.approx(emb.file_bytes / 2, rel=0.01)       # float16 file, one header


def test_terms_match_an_independent_count():
    """Protects the arithmetic of the largest terms against a hand count on the embedded model (L=6, H=8,
    d_head=32, d=256, I=512, V=343, float32): END caches of 2 x 100 prompts = 200 x 6 x (256 + 1024) x 4 B;
    identify's peak = baseline + weights + its largest phase; the estimate only grows with --n-samples."""
    s = estimate.shape_of("embedded")
    assert estimate.end_cache_bytes(s, 200, 4) == 200 * 6 * (8 * 32 + 4 * 256) * 4
    assert estimate.bootstrap_bytes(100, 1000, 54) == 1000 * 100 * 16 + 1000 * 54 * 16
    e = estimate.estimate(identify_config.Identify(task="addition", n_samples=100))
    assert e.phases["patching"]["END caches of X_r and X_c"] == estimate.end_cache_bytes(s, 200, 4)
    assert e.peak_bytes == estimate.BASELINE + s.params * 4 + sum(e.phases[e.peak_phase].values())
    assert e.fixed == {"baseline": estimate.BASELINE, "weights": s.params * 4}
    sizes = [estimate.estimate(identify_config.Identify(n_samples=n)).peak_bytes for n in (100, 1000, 10_000, 50_000)]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]
    assert estimate.estimate(identify_config.Identify(dtype="bfloat16")).fixed["weights"] == s.params * 2


def test_core_knows_no_step():
    """Protects "core/ knows no step": every step config that has an estimate gives it
    through its own ``memory`` method, so no module of ``arithmech/core`` names a step config class (the
    estimate once looked steps up by class name)."""
    import dataclasses
    import re

    classes = {n: v for m in (identify_config, analyze_config, circuits_config, prompts_config, config_training) for n, v in vars(m).items() if isinstance(v, type)
               and dataclasses.is_dataclass(v) and v.__module__ == m.__name__}     # the wings' configs, config_training
    steps = list(classes)
    with_memory = [n for n in steps if hasattr(classes[n], "memory")]
    assert {"Identify", "Analyze", "Beyond", "Faithfulness", "Stability", "Accuracy", "Shots", "Finetune",
            "Table1"} <= set(with_memory)
    core = Path(estimate.__file__).parent
    for f in core.glob("*.py"):
        named = [n for n in steps if re.search(rf"[\"']{n}[\"']", f.read_text())]
        assert not named, (f.name, named)


def test_chunk_sizes_are_the_methods_own():
    """Protects: the chunk sizes the estimate repeats (so that it runs before torch loads) are the ones the
    methods use; a change there must change the model here."""
    from arithmech.methods import attribution, patching, upstream
    from arithmech.methods.ablation import intervention
    assert (estimate.PATCH_ROWS, estimate.PATCH_LOGITS) == (patching.MAX_ROWS, patching.MAX_LOGITS)
    assert (estimate.KNOCKOUT_ROWS, estimate.KNOCKOUT_TOKENS) == (intervention.MAX_ROWS, intervention.MAX_TOKENS)
    assert (estimate.ATTRIBUTION_ROWS, estimate.UPSTREAM_ROWS) == (attribution.MAX_ROWS, upstream.MAX_ROWS)
    import inspect

    from arithmech.methods.ablation import pool
    assert estimate.POOL_FOLDS == inspect.signature(pool.build_pool).parameters["folds"].default


def test_every_step_has_an_estimate_and_a_line():
    """Protects: each of these steps (identify, analyze, beyond, faithfulness, stability, shots,
    accuracy-by-template, finetune, arms) gets an estimate from its default config on the embedded model, with positive forwards,
    a record for run.json and the progress line's text; a hub id (no geometry without loading) gets none."""
    configs = [identify_config.Identify(), analyze_config.Analyze(), circuits_config.Beyond(), circuits_config.Faithfulness(), identify_config.Stability(), prompts_config.Shots(), prompts_config.Accuracy(), config_training.Finetune(mode="full"),
               config_training.Table1(model_name="embedded")]
    for c in configs:
        e = estimate.estimate(c)
        assert e is not None and e.forwards > 0 and e.peak_bytes > estimate.BASELINE, type(c).__name__
        assert e.line().startswith("est. peak ") and "forwards" in e.line()
        rec = json.loads(json.dumps(e.record()))
        assert rec["peak_bytes"] == e.peak_bytes and rec["peak_phase"] in rec["phases"]
    assert estimate.shape_of("org/not-here") is None


def test_check_refuses_naming_the_flag_and_passes_a_normal_config(monkeypatch):
    """Protects: with less memory free than the estimate (faked by $ARITHMECH_MEMORY_BYTES), :func:`check` raises
    one ValueError line naming the step, the sizes and the flag to lower; with the machine's own memory a
    default config passes and returns its estimate."""
    monkeypatch.delenv(estimate.MEMORY_ENV, raising=False)
    assert admission.check(identify_config.Identify()) is not None
    monkeypatch.setenv(estimate.MEMORY_ENV, str(100 * estimate.MiB))
    with pytest.raises(ValueError) as err:
        admission.check(identify_config.Identify(n_samples=50_000))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("identify needs about ") and "lower --n-samples" in msg
    with pytest.raises(ValueError, match="lower --sizes"):
        admission.check(identify_config.Stability(sizes=(64, 50_000)))


def _cli(args: list[str], env: dict) -> subprocess.CompletedProcess:
    code = ("import runpy, sys; sys.argv = ['arithmech'] + sys.argv[1:]; "
            "runpy.run_module('arithmech', run_name='__main__', alter_sys=True)")
    probe = ("import sys, atexit; atexit.register(lambda: print('TORCH' if 'torch' in sys.modules else 'NOTORCH', "
             "file=sys.stderr)); " + code)
    return subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), **env}, timeout=60)


def test_cli_refuses_an_oversize_run_in_one_line_before_torch(tmp_path):
    """Protects the input contract for memory: ``identify --n-samples 50000`` (within the bound) on a machine
    that has 100 MiB free is refused in one ``error:`` line naming --n-samples, exit 2, within seconds,
    before torch is imported (so before any model loads), and writes nothing."""
    out = tmp_path / "out"
    r = _cli(["identify", "--model", "embedded", "--n-samples", "50000", "--out", str(out)],
             {estimate.MEMORY_ENV: str(100 * estimate.MiB)})
    lines = [x for x in r.stderr.splitlines() if x not in ("TORCH", "NOTORCH")]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: identify needs about ")
    assert "lower --n-samples" in lines[0] and "NOTORCH" in r.stderr
    assert not out.exists()


def test_cli_passes_a_normal_config_to_the_step(tmp_path, monkeypatch):
    """Protects: the check lets a run that fits go on: the command line calls the step with the config, after
    the estimate (the step itself is faked, so no model loads)."""
    from arithmech import cli
    seen = []
    monkeypatch.setattr(cli.importlib, "import_module",
                        lambda name: type("M", (), {"run": staticmethod(lambda c: seen.append(c) or {})}))
    monkeypatch.delenv(estimate.MEMORY_ENV, raising=False)
    monkeypatch.setitem(cli.COMMANDS, "accuracy-by-template",
                        cli.Command(prompts_config.Accuracy, "fake", "run", lambda r: None))
    cli.main(["accuracy-by-template", "--model", "embedded", "--results", str(tmp_path)])
    assert len(seen) == 1 and seen[0].n_per_template == prompts_config.Accuracy().n_per_template


def test_the_chain_backward_term_is_what_autograd_saves():
    """Protects beyond's EAP-IG term (``saved for the backward``: ``rows x L x (H*dh + 2d + 2*d_mlp) x 4`` bytes) on
    the model the benchmark measures: counted independently here with ``torch.autograd.graph.saved_tensors_hooks``
    on the embedded model's END chain (the bytes of every distinct storage autograd keeps, the weights left out),
    the term is within 25 % of what is saved. (The count depends on the model's shapes: on a tiny Llama with
    ``d_mlp = 2d`` and ``H*dh != d`` autograd keeps more per row, so this pins the term where it is used.)"""
    import torch

    from arithmech.core.models import load_model
    from arithmech.methods import attribution

    model, _, _ = load_model("embedded")
    cfg = model.config
    L, H, d, dm = cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size, cfg.intermediate_size
    hd = getattr(cfg, "head_dim", None) or d // H
    b, R = 16, 8
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in weights:
            saved[ptr] = t.untyped_storage().nbytes()
        return t

    z = [torch.randn(b, R, H * hd, requires_grad=True) for _ in range(L)]
    m = [torch.zeros(b, R, d, requires_grad=True) for _ in range(L)]
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = attribution.run_chain(model, torch.randn(b, R, d), z, m, torch.randint(0, cfg.vocab_size, (b,)))
    term = b * R * L * (H * hd + 2 * d + 2 * dm) * 4
    assert out.shape == (b, R) and abs(term / sum(saved.values()) - 1) <= 0.25, (term, sum(saved.values()))


def test_a_recorded_estimate_reads_back_as_the_same_estimate():
    """Protects ``benchmarks/bench_estimate.py``'s comparison with what a step recorded: ``Estimate.from_record``
    rebuilds ``record()``'s dict into an estimate with the same peak, peak phase and forward count."""
    est = estimate.Estimate(step="identify", fixed={"weights": 10, "baseline": 5},
                     phases={"patching": {"caches": 7, "batch": 2}, "knockout": {"kv": 8}}, forwards=123, flag="--n-samples")
    back = estimate.Estimate.from_record("identify", json.loads(json.dumps(est.record())))
    assert (back.peak_bytes, back.peak_phase, back.forwards, back.phases) == (24, "patching", 123, est.phases)
    assert back.record() == est.record()
