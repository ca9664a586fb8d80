"""A case study on any model: accuracy per template, two counterfactuals, Table 1 side by side.

The paper's claims, decided on a results folder, are :mod:`arithmech.experiments.claims`.

The book's SmolLM2-135M-Instruct appendix runs on this module with ``model`` a parameter (the embedded
model works too). A pretrained model is a weak calculator, so the method runs on the prompts it
answers right (X_r). What the appendix needs beyond the pipeline's own steps:

* :func:`accuracy_by_template`: top-1 accuracy (Wilson 95% interval) and mean p({C}) per operation
  and template (``accuracy_by_template.csv``);
* :func:`operand_identify`, :func:`counterfactual_overlap`: identify with the paper's *operator*
  counterfactual and with the *operand* counterfactual (:func:`arithmech.data.pairs.make_operand_pairs`),
  and the heads both find;
* :func:`ensure_identify`, :func:`ensure_analyze`, :func:`ensure_accuracy`: the appendix's results, read
  from the model's results folder or computed (knockout curves on a coarser grid of k than the identify
  command's, so that the chapter runs in minutes on 2 cores);

Table 1 (base / full SFT / precise SFT) is :mod:`arithmech.experiments.table1`. The commands::

    python -m arithmech lrgrid --model smollm2-135m --results results          # each mode's learning rate
    python -m arithmech table1 --model smollm2-135m --results results
    python -m arithmech accuracy-by-template --model smollm2-135m --results results
    python -m arithmech counterfactuals --model smollm2-135m --task addition --results results
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Sequence
import pandas as pd
import torch

from arithmech.data import pairs as D
from arithmech.data import templates as T
from arithmech.core.stats import wilson_interval
from arithmech.core import results as R
from arithmech.experiments.measures import answer_scores

from arithmech.experiments.casestudy_knockout import HEAD_KS, MLP_KS, lean_knockout  # noqa: F401 (the appendix's)


# --------------------------------------------------------------------------- accuracy per template
def _figure(template_id: str) -> str:
    return "Fig. 10" if any(t.id == template_id for t in T.FIG10) else "Fig. 8"


def accuracy_by_template(model, tok, task: str = "all", n_per_template: int = 16, seed: int = 0,
                         batch_size: int = 64) -> pd.DataFrame:
    """One row per template and one ``(all)`` row per operation: ``op, template, figure, family, example, n,
    correct, accuracy, ci_low, ci_high`` (Wilson 95%) ``, mean_p_answer`` (mean p({C}) at END)."""
    tpls = D.select_templates(task)
    samples, _ = D.make_pairs(tok, tpls, n=n_per_template * len(tpls), seed=seed)
    ok, p = answer_scores(model, tok, samples, batch_size)
    df = pd.DataFrame({"op": [s.op for s in samples], "template": [s.template for s in samples],
                       "family": [s.family for s in samples], "example": [s.clean for s in samples],
                       "ok": ok.int().numpy(), "p": p.numpy()})
    groups = [((op, tid), g) for (op, tid), g in df.groupby(["op", "template"], sort=False)]
    groups += [((op, "(all)"), g) for op, g in df.groupby("op", sort=False)]
    rows = []
    for (op, tid), g in groups:
        k, n = int(g.ok.sum()), len(g)
        lo, hi = wilson_interval(k, n)
        whole = tid == "(all)"
        rows.append({"op": op, "template": tid, "figure": "(all)" if whole else _figure(tid),
                     "family": "(all)" if whole else g.family.iloc[0],
                     "example": "" if whole else g.example.iloc[0], "n": n, "correct": k, "accuracy": k / n,
                     "ci_low": lo, "ci_high": hi, "mean_p_answer": float(g.p.mean())})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------- identify with two counterfactuals
def operand_identify(model, tok, task: str = "addition", n_samples: int = 128, seed: int = 0, **kw):
    """:func:`arithmech.identify.identify` on ``task`` with the *operand* counterfactual: X_c is X_r with
    other operands (:func:`arithmech.data.pairs.make_operand_pairs`). Rows are labelled ``"<task> (operand)"``.

    ``kw`` go to ``identify`` (e.g. ``knockout=False``); no transfer test (it is the operator run's).
    ``kw["answer_token"]`` (default ``"last-digit"``, identify's) chooses the pairs' answer token; pairs whose
    X_c leaves the model's answer in place are dropped there, as for the operator counterfactual.
    """
    from arithmech.methods.identify import identify
    pairs, _ = D.make_operand_pairs(tok, task, n=n_samples, seed=seed, answer_token=kw.get("answer_token", "last-digit"))
    res = identify(model, tok, [pairs], n_samples=n_samples, seed=seed, **{**kw, "transfer": False})
    label = f"{task} (operand)"
    res.effects["task"] = label
    res.key_heads["task"] = label
    res.knockout["task"] = label
    res.info = {label: res.info.pop("custom")}
    res.tasks = {label: res.tasks.pop("custom")}
    res.params.update(tasks=[label], counterfactual="operand")
    return res


def counterfactual_overlap(operator_effects: pd.DataFrame, operand_effects: pd.DataFrame, task: str = "addition",
                           top: int = 10) -> dict:
    """Shared and specific heads among the ``top`` of the operator and the operand effect rankings of
    ``task`` (:func:`arithmech.methods.knockout.overlap`; ``a`` = operator, ``b`` = operand), with each head's
    relative change and logit difference under both counterfactuals."""
    from arithmech.methods.identify import ranking
    from arithmech.methods.knockout_overlap import overlap
    ov = overlap(ranking(operator_effects, task)[0], ranking(operand_effects, f"{task} (operand)")[0], top)
    def look(eff, t, h):
        r = eff[(eff.task == t) & (eff.layer == h[0]) & (eff["head"].astype(str) == str(h[1]))].iloc[0]
        return {"effect": float(r.effect), "logit_diff": float(r.logit_diff)}
    heads = sorted(set(ov["a"]) | set(ov["b"]))
    ov["by_head"] = [{"head": f"{l}.{h}", "operator": look(operator_effects, task, (l, h)),
                      "operand": look(operand_effects, f"{task} (operand)", (l, h))} for l, h in heads]
    return {**{k: ([f"{l}.{h}" for l, h in v] if isinstance(v, list) and k != "by_head" else v)
               for k, v in ov.items()}, "task": task, "a_name": "operator", "b_name": "operand"}


# -------------------------------------------------------------------- the appendix's results files
def tokenizer_cases(tok, cases: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Fig. 4's ``(prompt, answer)`` cases with each prompt ending where this tokenizer's answer token
    starts (SmolLM2: "281 + 135 =" → "281 + 135 = "; a prompt ending in a digit keeps no joiner)."""
    out = []
    for p, e in cases:
        split = D.answer_split(tok, p, e, "" if p[-1:].isdigit() else " ")
        out.append((split[0] if split else p, e))
    return out


def top_transfer(model, tok, res, top: int = 10, heldout: str = "fig10", n_samples: int = 48, seed: int = 0) -> None:
    """Fig. 4 and a held-out template family with the ``top`` heads by effect rank (no head of SmolLM2
    passes the −5% threshold, so the threshold's key heads would be an empty set). Fills
    ``res.transfer`` (the paper's cases, knocked out: the ``top`` heads of task ``all``) and
    ``res.heldout`` (heads ranked on the samples outside ``heldout``, knocked out on fresh ``heldout``
    pairs, against as many random heads)."""
    from arithmech.methods.identify import effects_frame, ranking
    from arithmech.experiments.paper import FIG4_CASES
    from arithmech.methods.knockout import group_key, heldout_drop, mean_activations, transfer_table
    from arithmech.methods.knockout_means import PoolMeans
    held = {t.id for t in D.select_templates(heldout)}
    every = [s for ss in res.tasks.values() for s in ss]
    use = torch.tensor([s.template not in held for s in every])
    primary = "all" if "all" in res.patched else next(iter(res.tasks))
    res.transfer = transfer_table(model, tok, ranking(res.effects, primary)[0][:top], res.means,
                                  tokenizer_cases(tok, FIG4_CASES))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        id_heads = ranking(effects_frame(res.patched[primary].select(use), "id", prob=False), "id")[0][:top]
    test, _ = D.make_pairs(tok, heldout, n=n_samples, seed=seed + 1, answer_token=res.params.get("answer_token", "first"))
    means = res.means                              # the reference pool, when lean_knockout built one
    if not isinstance(means, PoolMeans):
        keep = [(s, group_key(s)) for s, u in zip(every, use.tolist()) if u]
        means = mean_activations(model, tok, [s.corrupt for s, _ in keep], [k for _, k in keep])
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    r = heldout_drop(model, tok, id_heads, means, test, [(l, h) for l in range(L) for h in range(H)],
                     res.params["n_random"], seed)
    res.heldout = {"family": heldout, "heads_from": f"top {top} by effect rank on the other templates",
                   "identified_on": int(use.sum()), "heads": [f"{l}.{h}" for l, h in id_heads],
                   "test_prompts": f"data.make_pairs(tok, {heldout!r}, n={n_samples}, seed={seed + 1}), unfiltered", **r}


def ensure_identify(model, tok, folder: str | Path, tasks="all", n_samples: int = 512, seed: int = 0,
                    knockout_samples: int = 128, n_random: int = 20, heldout_samples: int = 48,
                    operand_task: str = "addition", recompute: bool = False,
                    knockout_positions: Sequence[str] = ("end", "all"), pool_size: int = 128) -> dict:
    """The appendix's identify results in ``folder``: read them, or compute and write them when missing.

    The defaults are the book's scale for a 135M model on 2 cores (128 knockout prompts, a pool of 128 X_c
    per family, 20 random orders; ``identify``'s command defaults are 256 and 512).
    Operator counterfactual on ``tasks`` (maps of Fig. 2 / 15, key heads) with :func:`lean_knockout`
    curves and :func:`top_transfer` (Fig. 4 prompts; ``heldout_samples`` fresh Fig. 10 pairs); operand
    counterfactual on ``operand_task`` in ``folder/operand/``; ``counterfactual_overlap.json``. No
    probability columns (``prob=False``: the full-vocabulary softmax of every patched row would cost
    about 40% of the patching time; the accuracy table has p({C})). Returns
    :func:`arithmech.methods.identify.load_results` of both runs plus ``overlap``. Files made with other
    parameters (another chapter's call, say) are recomputed, never silently reused.
    """
    from arithmech.methods.identify import identify, write_results
    folder = Path(folder)
    want = {"tasks": tasks, "n_samples": n_samples, "seed": seed, "knockout_samples": knockout_samples,
            "n_random": n_random, "heldout_samples": heldout_samples, "pool_size": pool_size,
            "knockout_positions": list(knockout_positions)}
    if recompute or not same_parameters(folder, "identify", want):
        res = identify(model, tok, tasks, n_samples=n_samples, seed=seed, knockout=False, transfer=False,
                       n_random=n_random, prob=False)
        res.knockout = lean_knockout(model, tok, res, knockout_samples, n_random, seed, knockout_positions, pool_size)
        top_transfer(model, tok, res, 10, "fig10", heldout_samples, seed)
        write_results(res, folder, extra={"tasks": tasks, "knockout": "arithmech.experiments.casestudy.lean_knockout",
                                          "knockout_samples": knockout_samples, "n_random": n_random,
                                          "knockout_positions": list(knockout_positions), "pool_size": pool_size,
                                          "means": res.means.describe(),
                                          "heldout_samples": heldout_samples})
    if recompute or not R.exists(folder / "operand", "effects.csv"):
        res = operand_identify(model, tok, operand_task, n_samples, seed, knockout=False, prob=False)
        write_results(res, folder / "operand", extra={"counterfactual": "operand"})
    # the operand run has no knockout (knockout=False writes an empty knockout.csv): read its effects only
    out = {"operator": R.read_step(folder, "identify"), "operand": {"effects": R.read(folder / "operand", "effects.csv")}}
    out["operator"]["run"] = R.read_run(folder)["steps"]["identify"]
    if recompute or not R.exists(folder, "counterfactual_overlap.json"):
        R.write_step(folder, "counterfactuals", {"counterfactual_overlap.json": counterfactual_overlap(
            out["operator"]["effects"], out["operand"]["effects"], operand_task)}, {"operand_task": operand_task})
    out["overlap"] = R.read(folder, "counterfactual_overlap.json")
    return out


def same_parameters(folder: str | Path, step: str, want: dict) -> bool:
    """True when ``folder`` holds ``step``'s files made with every parameter in ``want`` as given."""
    if not R.exists(Path(folder), R.step_files(step)[0]):
        return False
    rec = R.read_run(folder)["steps"].get(step, {}).get("parameters", {})
    return all(rec.get(k) == v for k, v in want.items())


def ensure_analyze(model, tok, folder: str | Path, n_samples: int = 128, seed: int = 0, top: int = 10,
                   prompt: str = "4 + 3 = ", recompute: bool = False) -> dict:
    """The analyze step on the ``top`` heads of highest effect rank (task ``all``), read from ``folder`` or
    computed with the functions of :mod:`arithmech.methods.attention` and :mod:`arithmech.methods.mlp`: attention by role (with the KV head each query
    head reads), MLP_in and MLP_out − MLP_in on W_U, start–inflection–end, the layer-by-layer top
    numbers of ``prompt`` (ending with the space token, as this tokenizer needs).

    Unlike ``python -m arithmech analyze`` this does not need heads past the −5% threshold (SmolLM2 has
    none under the operator counterfactual). Writes the analyze files of the results contract.
    """
    from arithmech.methods import analyze as An
    from arithmech.methods import attention as At
    from arithmech.methods import mlp as M
    from arithmech.methods.identify import ranking
    folder = Path(folder)
    eff = R.read(folder, "effects.csv")
    heads = ranking(eff, "all" if (eff.task == "all").any() else eff.task.iloc[0])[0][:top]
    if recompute or not R.exists(folder, "analyze.json"):
        samples = An.reference_samples(folder, n_samples, seed)
        roles = At.attention_by_role(model, tok, samples)
        mlp = M.mlp_projection(model, tok, samples)
        stages = M.stage_layers(mlp)
        tops = M.layer_top_numbers(model, tok, prompt, k=5).assign(prompt=prompt)
        R.write_step(folder, "analyze", {
            **An.attention_files(roles, heads), "mlp_projection.csv": mlp, "top_numbers.csv": tops, "analyze.json": {
                "key_heads": An.key_head_summary(roles, heads),
                "heads_from": f"top {top} by effect rank", "stages": {k: list(v) for k, v in stages.items()},
                "final_norm": True, "prompt": prompt, "n_samples": len(samples)}},
            {"parameters": {"n_samples": n_samples, "seed": seed, "top": top, "prompt": prompt},
             "peak_memory": R.peak_memory()})
    roles = R.read(folder, "attention_roles.csv")
    return {"roles": roles, "labels": At.label_heads(roles, heads), "baseline": R.read(folder, "attention_baseline.csv"),
            "mlp": R.read(folder, "mlp_projection.csv"),
            "top": pd.read_csv(folder / "top_numbers.csv", dtype={"token": str}),
            "summary": R.read(folder, "analyze.json")}


def ensure_accuracy(model, tok, folder: str | Path, n_per_template: int = 16, seed: int = 0,
                    recompute: bool = False) -> pd.DataFrame:
    """``accuracy_by_template.csv`` of ``folder``, computed (every Fig. 8 / Fig. 10 template) when missing."""
    if recompute or not R.exists(folder, "accuracy_by_template.csv"):
        df = accuracy_by_template(model, tok, "all", n_per_template, seed)
        R.write_step(folder, "accuracy", {"accuracy_by_template.csv": df},
                     {"parameters": {"n_per_template": n_per_template, "seed": seed}})
    return R.read(folder, "accuracy_by_template.csv")


# -------------------------------------------------------------------------------- Table 1 side by side
def table1_side_by_side(results_dir: str | Path, model_name: str) -> pd.DataFrame:
    """One row per (model, mode): mean math and generic accuracy (%), samples/s and tuned parameters, for
    the paper's LLaMA2-7B (Table 1), the embedded model (``results/embedded/finetune/{full,precise}.json``,
    toy benchmarks: two-digit problems and generic facts) and ``model_name`` (``finetune/<mode>.json``
    of :mod:`arithmech.experiments.table1`). Missing results are left out."""
    from arithmech.experiments.paper import table1_by_mode
    from arithmech.experiments.table1 import table1_frame
    rows = []
    for mode, r in table1_by_mode("LLaMA2-7B").items():
        rows.append(("LLaMA2-7B (paper)", mode, sum(r[k] for k in ("gsm8k", "addsub", "singleeq", "svamp")) / 4,
                     (r["mmlu"] + r["csqa"]) / 2, r.get("samples_per_second"), r.get("tuned_parameters"), None))
    emb = Path(results_dir) / "embedded"
    val = lambda m, k: 100 * m[k]["value"] if k in m else float("nan")
    for mode in ("full", "precise"):
        if R.finetune_path(emb, mode).exists():
            r = R.read_finetune(emb, mode)
            if mode == "full" or not any(x[0] == "embedded" for x in rows):
                rows.append(("embedded", "base", val(r["base"], "two_digit"), val(r["base"], "generic"), None, None, None))
            rows.append(("embedded", mode, val(r["results"], "two_digit"), val(r["results"], "generic"),
                         r["train"].get("samples_per_second"), r.get("tuned_parameters"), None))
    t = table1_frame(Path(results_dir) / model_name)
    for mode in dict.fromkeys(t.get("mode", [])):
        d = t[t["mode"] == mode].set_index("measure")
        math_ = d.loc[["heldout_phrasings", "two_digit", "addsub", "singleeq", "svamp"], "value"].mean()
        rows.append((model_name, mode, 100 * math_, 100 * d.loc[["mmlu", "csqa"], "value"].mean(),
                     d["samples_per_second"].iloc[0], d["tuned_parameters"].iloc[0], d.loc["lm_loss", "value"]))
    return pd.DataFrame(rows, columns=["model", "mode", "math accuracy (%)", "generic accuracy (%)", "train samples/s",
                                       "tuned parameters", "generic-text loss"])


# -------------------------------------------------------------------------------------------- CLI
def _cli(a) -> None:
    from arithmech.core.models import load_model
    folder = R.model_folder(a.results, a.model)
    step = "accuracy" if a.command == "accuracy-by-template" else "counterfactuals"
    R.check_writable(folder, step, a.overwrite)
    net, tok, _ = load_model(a.model, device=a.device, dtype=a.dtype)
    if step == "accuracy":
        df = ensure_accuracy(net, tok, folder, a.n_per_template, a.seed, recompute=True)
        print(df[df.template == "(all)"].to_string(index=False))
        return
    from arithmech.methods.identify import identify, write_results
    op = identify(net, tok, a.task, n_samples=a.n_samples, seed=a.seed, knockout=False, transfer=False)
    nd = operand_identify(net, tok, a.task, a.n_samples, a.seed, knockout=False)
    out = folder / "counterfactuals"
    write_results(op, out / "operator", model=a.model)
    write_results(nd, out / "operand", model=a.model)
    ov = counterfactual_overlap(op.effects, nd.effects, a.task)
    R.write_step(folder, "counterfactuals", {"counterfactual_overlap.json": ov}, {"operand_task": a.task})
    print(json.dumps({k: ov[k] for k in ("a", "b", "shared")}))


def add_cli(subparsers, name: str) -> None:
    """``accuracy-by-template`` or ``counterfactuals`` (operator vs operand counterfactual)."""
    from arithmech.core.inputs import POSITIVE, common_arguments
    if name == "accuracy-by-template":
        s = subparsers.add_parser(name, help="accuracy and p({C}) per template, with Wilson intervals")
        common_arguments(s)
        s.add_argument("--n-per-template", type=POSITIVE, default=16)
    else:
        s = subparsers.add_parser(name, help="identify with the operator and with the operand counterfactual")
        common_arguments(s, n_samples=128)
        s.add_argument("--task", default="addition")
    s.set_defaults(func=_cli)
