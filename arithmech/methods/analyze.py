"""Analyze (§4.2, §5.2, App. C, F, H): what the key heads attend to, what the MLPs write.

The measurements live in two modules: :mod:`arithmech.methods.attention` (attention of every head
by token role: A, B, operator, BOS, other; the head labels operand / operator / other) and
:mod:`arithmech.methods.mlp` (cosines of the MLP inputs and writes with ``W_U`` rows per layer, the
start-inflection-end layers of App. C, the number tokens each layer writes). One prompt at a time
(attention strips of Fig. 7 / 16, the prompt explorer, knockout) lives in
:mod:`arithmech.methods.explorer`; :func:`run` is the step end to end (``python -m arithmech analyze``):
it reads the key heads of the identify step and writes the analyze files of the results folder.
"""
from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from arithmech.data import pairs as D
from arithmech.methods.attention import Head, attention_by_role, label_heads
from arithmech.methods.mlp import layer_top_numbers, mlp_projection, stage_layers


# ------------------------------------------------------------------------------ results and CLI
def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def load_key_heads(folder: str | Path) -> list[Head] | None:
    """Key heads from ``key_heads.json`` (written by identify), ranked; ``None`` when absent."""
    p = Path(folder) / "key_heads.json"
    if not p.exists():
        return None
    obj = json.loads(p.read_text())
    rows = obj.get("heads", obj.get("key_heads", [])) if isinstance(obj, dict) else obj
    return [(int(r["layer"]), int(r["head"])) if isinstance(r, dict) else (int(r[0]), int(r[1])) for r in rows]


def reference_samples(folder: Path, model, tok, n: int, seed: int) -> list[D.Sample]:
    """``n`` reference samples (X_r): ``prompts.jsonl`` of the folder, else fresh Fig. 8 draws that the
    model answers right. A seeded subset when there are more."""
    p = folder / "prompts.jsonl"
    if p.exists():
        samples = D.load_jsonl(p)
    else:
        samples, _ = D.make_pairs(tok, "fig8", n=2 * n, seed=seed)
        samples, _ = D.filter_correct(model, tok, samples)
    if not samples:
        raise ValueError("the model answers none of the reference prompts right; nothing to analyze")
    rng = np.random.default_rng(seed)
    return [samples[i] for i in sorted(rng.permutation(len(samples))[:n])]


def compute_key_heads(folder: Path, model: str, device: str, dtype: str, seed: int, n_samples: int) -> list[Head]:
    """No ``key_heads.json`` yet: run the identify step (path patching, all four operations), which writes it."""
    from arithmech.methods import identify
    identify.run(model=model, n_samples=n_samples, seed=seed, out=str(folder), device=device, dtype=dtype)
    return load_key_heads(folder)


def update_run_json(folder: Path, step: str, record: dict) -> None:
    """Merge ``{step: record}`` into ``folder/run.json`` (other steps' records are kept)."""
    p = folder / "run.json"
    obj = json.loads(p.read_text()) if p.exists() else {}
    obj[step] = record
    _atomic(p, json.dumps(obj, indent=2, default=str))


def run(model: str = "embedded", results: str = "results", n_samples: int = 256, seed: int = 0,
        device: str = "cpu", dtype: str = "float32", prompt: str = "4 + 3 =", final_norm: bool = True,
        batch_size: int = 64) -> dict:
    """The analyze step end to end; writes ``attention_roles.csv``, ``mlp_projection.csv``,
    ``top_numbers.csv``, ``analyze.json`` and the ``analyze`` record of ``run.json``.

    Returns a dict with the loaded ``model``, ``tok``, ``geometry``, ``samples``, ``key_heads``,
    the DataFrames ``roles``, ``labels``, ``mlp``, ``top`` and the ``stages`` found.
    """
    import transformers

    from arithmech.methods.identify import results_name
    from arithmech.core.models import load_model
    if n_samples < 1:
        raise ValueError(f"n_samples={n_samples}: need at least one sample")
    t0 = time.time()
    net, tok, geo = load_model(model, device=device, dtype=dtype, attn_implementation="eager")
    folder = Path(results) / results_name(model)
    folder.mkdir(parents=True, exist_ok=True)
    heads = load_key_heads(folder)
    if heads is None:
        heads = compute_key_heads(folder, model, device, dtype, seed, n_samples)
    if not heads:
        raise ValueError(f"{folder / 'key_heads.json'} lists no key heads: rerun identify with a higher --threshold")
    samples = reference_samples(folder, net, tok, n_samples, seed)
    roles = attention_by_role(net, tok, samples, batch_size=batch_size)
    labels = label_heads(roles, heads)
    mlp = mlp_projection(net, tok, samples, final_norm=final_norm, batch_size=batch_size)
    stages = stage_layers(mlp) if geo.n_layers >= 5 else {}
    top = layer_top_numbers(net, tok, prompt, k=5, final_norm=final_norm)
    for name, df in [("attention_roles", roles), ("mlp_projection", mlp), ("top_numbers", top.assign(prompt=prompt))]:
        _atomic(folder / f"{name}.csv", df.to_csv(index=False, float_format="%.8g"))
    summary = {"key_heads": labels[["name", "label", "operand", "operator", "rest", "kv_head"]].to_dict("records"),
               "stages": {k: list(v) for k, v in stages.items()}, "final_norm": final_norm, "prompt": prompt,
               "n_samples": len(samples)}
    _atomic(folder / "analyze.json", json.dumps(summary, indent=2))
    update_run_json(folder, "analyze", {
        "parameters": dict(model=model, n_samples=n_samples, seed=seed, device=device, dtype=dtype,
                           prompt=prompt, final_norm=final_norm, batch_size=batch_size),
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                     "pandas": pd.__version__, "transformers": transformers.__version__},
        "wall_s": round(time.time() - t0, 2)})
    return dict(model=net, tok=tok, geometry=geo, samples=samples, key_heads=heads, roles=roles,
                labels=labels, mlp=mlp, top=top, stages=stages, folder=folder, summary=summary)


def _cli(a) -> None:
    r = run(model=a.model, results=a.results, n_samples=a.n_samples, seed=a.seed, device=a.device,
            dtype=a.dtype, prompt=a.prompt, final_norm=not a.no_final_norm)
    print(r["labels"][["name", "label", "operand", "operator", "rest"]].to_string(index=False))
    print("start-inflection-end:", r["stages"])
    print(f"wrote {r['folder']}/attention_roles.csv, mlp_projection.csv, top_numbers.csv, analyze.json")


def add_cli(subparsers) -> None:
    s = subparsers.add_parser("analyze", help="attention of key heads by role, MLP projections on W_U (§5.2)")
    s.add_argument("--model", default="embedded")
    s.add_argument("--results", default="results", help="results root; files go to RESULTS/<model-name>/")
    s.add_argument("--n-samples", type=int, default=256)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--device", default="cpu")
    s.add_argument("--dtype", default="float32")
    s.add_argument("--prompt", default="4 + 3 =", help="prompt of the layer-by-layer top-token table (Fig. 6c)")
    s.add_argument("--no-final-norm", action="store_true", help="project without the final norm's gain")
    s.set_defaults(func=_cli)
