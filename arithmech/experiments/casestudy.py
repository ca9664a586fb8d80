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
  from the model's results folder when they were made with the same parameters, else computed by the
  same functions the Identify and Analyze chapters call (the model is a parameter);

Table 1 (base / full SFT / precise SFT) is :mod:`arithmech.experiments.table1`. The commands::

    python -m arithmech lrgrid --model smollm2-135m --results results          # each mode's learning rate
    python -m arithmech table1 --model smollm2-135m --results results
    python -m arithmech accuracy-by-template --model smollm2-135m --results results
    python -m arithmech counterfactuals --model smollm2-135m --task addition --results results
"""
from __future__ import annotations

import json
from pathlib import Path
import pandas as pd

from arithmech.data import pairs as D
from arithmech.data import templates as T
from arithmech.core.stats import wilson_interval
from arithmech.core import results as R
from arithmech.experiments.measures import answer_scores



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
BOOK_IDENTIFY = dict(task="all", n_samples=512, knockout_samples=128, pool_size=128, knockout_positions="both",
                     prob=False)
"""The book's identify scale for a 135M model on 2 cores: 512 pairs per operation (SmolLM2 answers about
1 in 6 right on the last digit), 128 knockout prompts, a pool of 128 X_c per family, knockout at END and
at every position; no P({C}) columns (its full-vocabulary softmax per patched row is ~40% of the patching
time; the accuracy table has p({C})). ``identify``'s command defaults are 256 prompts and 512 X_c."""


def identify_record(seed: int = 0, device: str = "cpu", dtype: str = "float32", **params) -> dict:
    """The parameters :func:`ensure_identify` asks of a recorded identify run before reusing it: the book's
    scale, ``params``, and every default of :func:`arithmech.methods.identify.identify` that changes the files
    (a run made with another answer token or threshold is never reused)."""
    import inspect
    from arithmech.methods.identify import identify
    defaults = {k: v.default for k, v in inspect.signature(identify).parameters.items()
                if k in ("threshold", "method", "n_random", "ks", "curves_for", "heldout", "answer_token", "n_boot")}
    return {**defaults, **BOOK_IDENTIFY, **params, "seed": seed, "device": device, "dtype": dtype}


def ensure_identify(model: str, results: str | Path = "results", recompute: bool = False, device: str = "cpu",
                    dtype: str = "float32", seed: int = 0, operand_task: str = "addition", **params) -> dict:
    """The identify step of ``model`` as the Identify chapter and ``python -m arithmech identify`` run it
    (:func:`arithmech.methods.identify.run`, :data:`BOOK_IDENTIFY` updated by ``params``), computed only
    when the model's folder holds no identify run made with these parameters; then the operand
    counterfactual of ``operand_task`` (``folder/operand/``) and ``counterfactual_overlap.json``.

    Returns ``{"operator": identify's files (+ "run": its run.json record), "operand": {"effects"},
    "overlap"}``."""
    from arithmech.methods import identify as I
    want = {**BOOK_IDENTIFY, **params, "seed": seed}
    folder = R.model_folder(results, model)
    fresh = recompute or not R.made_with(folder, "identify", identify_record(seed, device, dtype, **params))
    if fresh:
        I.run(model=model, results=results, device=device, dtype=dtype, overwrite=True, **want)
    if fresh or not R.exists(folder / "operand", "effects.csv") or not R.exists(folder, "counterfactual_overlap.json"):
        from arithmech.core.models import load_model
        net, tok, _ = load_model(model, device=device, dtype=dtype, attn_implementation="sdpa")
        res = operand_identify(net, tok, operand_task, want["n_samples"], seed, knockout=False, prob=False)
        I.write_results(res, folder / "operand", extra={"counterfactual": "operand"}, model=model)
        R.write_step(folder, "counterfactuals", {"counterfactual_overlap.json": counterfactual_overlap(
            R.read(folder, "effects.csv"), res.effects, operand_task)}, {"operand_task": operand_task})
    out = {"operator": R.read_step(folder, "identify"), "operand": {"effects": R.read(folder / "operand", "effects.csv")},
           "overlap": R.read(folder, "counterfactual_overlap.json")}
    out["operator"]["run"] = R.read_run(folder)["steps"]["identify"]
    return out


def ensure_analyze(model: str, results: str | Path = "results", recompute: bool = False, device: str = "cpu",
                   dtype: str = "float32", **params) -> dict:
    """The analyze step of ``model`` as the Analyze chapter runs it (:func:`arithmech.methods.analyze.run`
    with ``params``: ``n_samples``, ``seed``, ``prompt``, ...), computed only when the folder holds no
    analyze run made with them. Its heads are identify's studied heads: the key heads, or the top 10 by
    effect rank where none passes (:func:`arithmech.methods.effects.studied_heads`).

    Returns ``roles``, ``labels`` (of the studied heads), ``baseline``, ``mlp``, ``top``, ``summary``."""
    from arithmech.methods import analyze as An
    from arithmech.methods import attention as At
    folder = R.model_folder(results, model)
    if recompute or not R.made_with(folder, "analyze", {**params, "device": device, "dtype": dtype}):
        An.run(model=model, results=results, device=device, dtype=dtype, overwrite=True, **params)
    roles = R.read(folder, "attention_roles.csv")
    return {"roles": roles, "labels": At.label_heads(roles, An.load_key_heads(folder)[0]),
            "baseline": R.read(folder, "attention_baseline.csv"), "mlp": R.read(folder, "mlp_projection.csv"),
            "top": pd.read_csv(folder / "top_numbers.csv", dtype={"token": str}), "summary": R.read(folder, "analyze.json")}


def ensure_accuracy(model, tok, folder: str | Path, n_per_template: int = 16, seed: int = 0,
                    recompute: bool = False) -> pd.DataFrame:
    """``accuracy_by_template.csv`` of ``folder``, computed (every Fig. 8 / Fig. 10 template) when missing or
    made with other parameters."""
    if recompute or not R.made_with(folder, "accuracy", {"n_per_template": n_per_template, "seed": seed}):
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
