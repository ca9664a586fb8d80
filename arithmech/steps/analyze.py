"""Analyze (§4.2, §5.2, App. C, F, H): what the key heads attend to, what the MLPs write.

The measurements live in two modules: :mod:`arithmech.methods.attention` (attention of every head
by token role: A, B, operator, BOS, other, with and without the first position, mass and density;
the head labels operand / operator / other; each key head against the non-key heads) and
:mod:`arithmech.methods.mlp` (cosines of the MLP inputs and writes with ``W_U`` rows per layer, the
start-inflection-end layers of App. C, the number tokens each layer writes). One prompt at a time
(attention strips of Fig. 7 / 16, the prompt explorer, knockout) lives in
:mod:`arithmech.methods.explorer`; :func:`run` is the step end to end (``python -m arithmech analyze``):
it reads the key heads of the identify step and writes the analyze files of the results folder.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from arithmech.core import results as R

from arithmech.data import pairs
from arithmech.data import pairs as D
from arithmech.methods.attention import Head, attention_by_role, label_heads, nonkey_baseline
from arithmech.methods.mlp import layer_top_numbers, mlp_projection, stage_layers
import pandas as pd
from arithmech.data.pairs import reference_samples


# ------------------------------------------------------------------------------ results and CLI
def load_key_heads(folder: str | Path) -> tuple[list[Head], str]:
    """The heads to analyze from identify's files (checked by the results contract) and where they come
    from: the key heads of ``key_heads.json``, ranked, or where none passed, the top ones by effect rank
    (:func:`arithmech.methods.effects.studied_heads`, the rule every later step uses)."""
    from arithmech.methods.effects import studied_heads
    kh = R.read(folder, "key_heads.json")
    try:
        heads = [(int(r["layer"]), int(r["head"])) for r in kh["heads"]]
    except (TypeError, KeyError, ValueError):
        raise R.ResultsError(f"{Path(folder) / 'key_heads.json'}: each head needs integer 'layer' and 'head'; "
                             "re-run python -m arithmech identify") from None
    if heads:
        return heads, "key heads"
    return studied_heads(R.read(folder, "effects.csv"), kh["task"], kh["threshold"])




def attention_files(roles, heads: list[Head]) -> dict:
    """The attention part of the analyze files: ``attention_roles.csv`` (``roles``, every head) and
    ``attention_baseline.csv`` (each of ``heads`` against the non-key heads, :func:`nonkey_baseline`)."""
    return {"attention_roles.csv": roles, "attention_baseline.csv": nonkey_baseline(roles, heads)}


def key_head_summary(roles, heads: list[Head]) -> list[dict]:
    """``analyze.json``'s ``key_heads``: per key head its label and masses with the first position, the
    mass on the first position, and the label and masses without it."""
    lab, nf = label_heads(roles, heads), label_heads(roles, heads, view="without first")
    cols = ["name", "label", "operand", "operator", "rest", "kv_head"] + (["first"] if "first" in lab else [])
    out = lab[cols].to_dict("records")
    for row, (_, r) in zip(out, nf.iterrows()):
        row.update(label_nofirst=r["label"], operand_nofirst=r["operand"], operator_nofirst=r["operator"])
    return out


def run(model: str = "embedded", results: str | Path = "results", n_samples: int = 256, seed: int = 0,
        device: str = "cpu", dtype: str = "float32", prompt: str = "4 + 3 =", final_norm: bool = True,
        batch_size: int = 64, overwrite: bool = False) -> dict:
    """The analyze step end to end on identify's files in ``results`` (the root or the model's folder):
    writes ``attention_roles.csv``, ``attention_baseline.csv``, ``mlp_projection.csv``, ``top_numbers.csv``, ``analyze.json`` and the
    ``analyze`` record of ``run.json``. Identify must have run (its files are checked before the model loads).

    Returns a dict with the loaded ``model``, ``tok``, ``geometry``, ``samples``, ``key_heads``,
    the DataFrames ``roles``, ``labels``, ``baseline``, ``mlp``, ``top`` and the ``stages`` found.
    """
    from arithmech.core.models import load_model
    if n_samples < 1:
        raise ValueError(f"n_samples={n_samples}: need at least one sample")
    folder = R.model_folder(results, model)
    R.check_writable(folder, "analyze", overwrite)
    heads, heads_from = load_key_heads(folder)
    samples = reference_samples(folder, n_samples, seed)
    t0 = time.time()
    net, tok, geo = load_model(model, device=device, dtype=dtype, attn_implementation="eager")
    roles = attention_by_role(net, tok, samples, batch_size=batch_size)
    labels = label_heads(roles, heads)
    mlp = mlp_projection(net, tok, samples, final_norm=final_norm, batch_size=batch_size)
    stages = stage_layers(mlp) if geo.n_layers >= 5 else {}
    top = layer_top_numbers(net, tok, prompt, k=5, final_norm=final_norm)
    summary = {"key_heads": key_head_summary(roles, heads), "heads_from": heads_from,
               "stages": {k: list(v) for k, v in stages.items()}, "final_norm": final_norm, "prompt": prompt,
               "n_samples": len(samples)}
    R.write_step(folder, "analyze", {**attention_files(roles, heads), "mlp_projection.csv": mlp,
                                     "top_numbers.csv": top.assign(prompt=prompt), "analyze.json": summary}, {
        "parameters": dict(model=model, n_samples=n_samples, seed=seed, device=device, dtype=dtype,
                           prompt=prompt, final_norm=final_norm, batch_size=batch_size),
        "versions": R.versions(),
        "wall_s": round(time.time() - t0, 2), "peak_memory": R.peak_memory()})
    return dict(model=net, tok=tok, geometry=geo, samples=samples, key_heads=heads, roles=roles,
                labels=labels, baseline=R.read(folder, "attention_baseline.csv"), mlp=mlp, top=top, stages=stages, folder=folder, summary=summary)


def _cli(a) -> None:
    r = run(model=a.model, results=a.results, n_samples=a.n_samples, seed=a.seed, device=a.device,
            dtype=a.dtype, prompt=a.prompt, final_norm=not a.no_final_norm, overwrite=a.overwrite)
    print(r["labels"][["name", "label", "operand", "operator", "rest"]].to_string(index=False))
    print("start-inflection-end:", r["stages"])
    from arithmech.methods.attention import verdict_lines
    print("\n".join(verdict_lines(r["baseline"])))
    print(f"wrote {r['folder']}/attention_roles.csv, attention_baseline.csv, mlp_projection.csv, top_numbers.csv, "
          "analyze.json")


def add_cli(subparsers, name: str = "analyze") -> None:
    from arithmech.core.inputs import common_arguments
    s = subparsers.add_parser("analyze", help="attention of key heads by role, MLP projections on W_U (§5.2); "
                              "reads identify's files")
    common_arguments(s, n_samples=256)
    s.add_argument("--prompt", default="4 + 3 =", help="prompt of the layer-by-layer top-token table (Fig. 6c)")
    s.add_argument("--no-final-norm", action="store_true", help="project without the final norm's gain")
    s.set_defaults(func=_cli)


def ensure_analyze(model: str, results: str | Path = "results", recompute: bool = False, device: str = "cpu",
                   dtype: str = "float32", **params) -> dict:
    """The analyze step of ``model`` as the Analyze chapter runs it (:func:`arithmech.steps.analyze.run`
    with ``params``: ``n_samples``, ``seed``, ``prompt``, ...), computed only when the folder holds no
    analyze run made with them. Its heads are identify's studied heads: the key heads, or the top 10 by
    effect rank where none passes (:func:`arithmech.methods.effects.studied_heads`).

    Returns ``roles``, ``labels`` (of the studied heads), ``baseline``, ``mlp``, ``top``, ``summary``."""
    from arithmech.methods import attention as At
    folder = R.model_folder(results, model)
    if recompute or not R.made_with(folder, "analyze", {**params, "device": device, "dtype": dtype}):
        run(model=model, results=results, device=device, dtype=dtype, overwrite=True, **params)
    roles = R.read(folder, "attention_roles.csv")
    return {"roles": roles, "labels": At.label_heads(roles, load_key_heads(folder)[0]),
            "baseline": R.read(folder, "attention_baseline.csv"), "mlp": R.read(folder, "mlp_projection.csv"),
            "top": pd.read_csv(folder / "top_numbers.csv", dtype={"token": str}), "summary": R.read(folder, "analyze.json")}
