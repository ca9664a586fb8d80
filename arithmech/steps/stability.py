"""How stable are the key heads? Seeds, sample sizes, template families and counterfactuals.

A key-head set is a measurement: another draw of prompts, another sample size, another template family or
another counterfactual may give another set. This experiment repeats identify's path patching over

* **seeds** × **sample sizes** (default 3 seeds × 64 / 128 / 256 / 512 pairs drawn): per seed, the largest
  size is drawn and patched *once*, and each smaller size takes the X_r among the first ``size`` drawn pairs
  — a nested prefix of the same draw (``draw_pairs`` draws pair by pair from one seeded stream, so these are
  exactly the prompts ``identify --n-samples size --seed s`` would keep). Sizes within a seed are thus
  nested, not independent; seeds are independent draws;
* **template families** (equation, statement, qa, time-span, accumulation): the largest size of each seed,
  split by the family of each prompt's template;
* **counterfactual kinds**: the paper's operator counterfactual and the operand counterfactual
  (:func:`arithmech.data.pairs.make_operand_pairs`), each drawn and patched on its own.

Every run (kind, seed, size, family) gives the key set (heads whose 95% bootstrap interval lies below the
threshold, :func:`arithmech.methods.effects.key_heads`) and the top-``top`` set (the ``top`` most negative
mean effects). Sets are compared by their Jaccard overlap ``|A ∩ B| / |A ∪ B|`` (undefined, NaN, when both
are empty) against a stated reference:

====================  ====================================================================================
``size_vs_largest``    a size against the largest size of the same seed and kind
``between_seeds``      two seeds at the same size and kind (every pair of seeds)
``between_kinds``      operator against operand counterfactual, same seed and size
``between_families``   two template families, same seed and kind, largest size
====================  ====================================================================================

Files (through :mod:`arithmech.core.results`, step ``stability``): ``stability.csv`` (the comparisons),
``stability_runs.csv`` (each run: prompts, key and top sets) and ``stability_heads.csv`` (per head and
kind: how often it is key / in the top, and its effect with its interval in the reference run: first seed,
largest size). The same arguments give byte-identical files. ``python -m arithmech stability`` runs it.
"""

from __future__ import annotations

import itertools
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from arithmech.core import admission, provenance, results
from arithmech.core.models import load_model
from arithmech.core.progress import Progress, announce
from arithmech.data import pairs
from arithmech.data.batches import answer_ids
from arithmech.data.splits import BOOTSTRAP_UNITS, resampling_units
from arithmech.evals.scoring import check_counterfactuals, filter_correct
from arithmech.identify.config import Stability as Config
from arithmech.identify.result import STABILITY_FILES as FILENAMES
from arithmech.identify.result import StabilityResult as Result  # Result, read: the step protocol
from arithmech.identify.result import read_stability as read
from arithmech.methods.effects import effects_frame, key_heads, ranking
from arithmech.methods.patching import Patched, path_patch
from arithmech.methods.prepare import task_templates

ALL = "all"  # the family label of a run over every template


@dataclass
class StabilityResult:
    """``table`` → stability.csv, ``runs`` → stability_runs.csv, ``heads`` → stability_heads.csv."""

    table: pd.DataFrame
    runs: pd.DataFrame
    heads: pd.DataFrame
    params: dict
    timings: dict = field(default_factory=dict)
    estimate: dict | None = None  # the estimate made before the run (arithmech.core.estimate)


def jaccard(a: set, b: set) -> float:
    """``|a ∩ b| / |a ∪ b|``; NaN when both are empty (no heads to agree on)."""
    return len(a & b) / len(a | b) if a | b else float("nan")


def _names(heads) -> list[str]:
    return [f"{l}.{h}" for l, h in heads]


def _draw(model, tok, config: Config, kind: str, seed: int, keep_correct: bool):
    """``(kept samples, their index among the pairs drawn, Patched)`` for one seed and kind: the largest of
    ``config.sizes`` drawn with ``config.to_draw()``, identify's X_r among them (answered right, and X_c moves the
    answer away: :func:`~arithmech.evals.scoring.check_counterfactuals`), or every drawn pair without
    ``keep_correct``."""
    n, batch_size = max(config.sizes), config.batch_size
    _, tpls = task_templates(config.task)
    drawn, _ = pairs.draw_pairs(tok, tpls, n=n, seed=seed, kind=kind, draw=config.to_draw())
    kept = (
        check_counterfactuals(model, tok, filter_correct(model, tok, drawn, batch_size)[0], batch_size)[0]
        if keep_correct
        else list(drawn)
    )
    ids = {id(s) for s in kept}
    index = [i for i, s in enumerate(drawn) if id(s) in ids]
    if not kept:
        raise ValueError(
            f"the model answers none of the {n} {kind}-counterfactual pairs of seed {seed} right: "
            "no X_r to patch; use a task the model can do or larger sizes"
        )
    p = path_patch(
        model,
        tok,
        [s.clean for s in kept],
        [s.corrupt for s in kept],
        answer_ids(tok, kept),
        prob=False,
        batch_size=batch_size,
    )
    return kept, index, p


def _run_row(config: Config, where: tuple, p: Patched, samples: list) -> tuple[dict, pd.DataFrame]:
    """One run's row of ``stability_runs.csv`` and its effects: ``where = (kind, seed, size, family)``, ``p`` the
    patched ``samples`` (their intervals resample ``config.bootstrap``'s units; the key rule and the top set are
    ``config.threshold``'s and ``config.top``'s)."""
    kind, seed, size, family = where
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unstable-ratio warnings: identify's run reports them
        eff = effects_frame(
            p, "run", prob=False, n_boot=config.n_boot, seed=seed, clusters=resampling_units(samples, config.bootstrap)
        )
    key = [h["name"] for h in key_heads(eff, "run", config.threshold)["heads"]]
    tops = _names(ranking(eff, "run")[0][: config.top])
    return (
        {
            "kind": kind,
            "seed": seed,
            "size": size,
            "family": family,
            "n_drawn": size,
            "n": p.logit_p.shape[0],
            "n_key": len(key),
            "key": " ".join(key),
            "top": " ".join(tops),
        },
        eff,
    )


def stability(model, tok, config: Config, *, families: bool = True, keep_correct: bool = True) -> StabilityResult:
    """Key-head sets over seeds × sizes × kinds (and template families), compared by Jaccard overlap.

    ``config`` (the step's, checked when made): seeds ``seed .. seed + seeds - 1``, the ``sizes`` (numbers of pairs
    *drawn*, as identify's ``n_samples``), the ``kinds``, the key rule (``threshold``, ``n_boot``, ``bootstrap``:
    what the intervals resample, as identify's), ``top``, and the draw of every pair
    (:meth:`arithmech.identify.config.Stability.to_draw`). Each run patches the X_r among the pairs drawn
    (``keep_correct=False`` keeps every drawn pair: for random test models that answer nothing right);
    ``families=False`` leaves out the runs per template family.
    """
    c, draw = config, config.to_draw()
    seeds = list(range(c.seed, c.seed + c.seeds))
    sizes, kinds = sorted(set(c.sizes)), list(dict.fromkeys(c.kinds))
    big = sizes[-1]
    runs, ref_eff, timings = [], {}, {}
    with Progress("stability", len(kinds) * len(seeds)) as bar:
        for kind, seed in itertools.product(kinds, seeds):
            t0 = time.time()
            kept, index, p = _draw(model, tok, c, kind, seed, keep_correct)
            timings[f"{kind}-{seed}"] = time.time() - t0
            for size in sizes:
                rows = [j for j, i in enumerate(index) if i < size]
                if rows:
                    row, eff = _run_row(c, (kind, seed, size, ALL), p.select(rows), [kept[j] for j in rows])
                    runs.append(row)
                    if seed == seeds[0] and size == big:
                        ref_eff[kind] = eff
            for fam in dict.fromkeys(s.family for s in kept) if families else ():
                rows = [j for j, s in enumerate(kept) if s.family == fam]
                runs.append(_run_row(c, (kind, seed, big, fam), p.select(rows), [kept[j] for j in rows])[0])
            bar.advance(note=f"{kind} seed {seed}: {len(kept)} X_r of {big}")
    runs = pd.DataFrame(runs)
    params = dict(
        task=c.task,
        seeds=seeds,
        sizes=sizes,
        kinds=kinds,
        answer_token=draw.answer_token,
        shots=draw.shots,
        **draw.recorded(),
        threshold=c.threshold,
        top=c.top,
        n_boot=c.n_boot,
        families=families,
        keep_correct=keep_correct,
        batch_size=c.batch_size,
        subsets="size n = the X_r among the first n pairs drawn with the seed "
        "(nested prefixes of one draw of the largest size per seed and kind)",
        bootstrap=c.bootstrap,
        key_rule=f"effect_hi < threshold (95% percentile bootstrap over {BOOTSTRAP_UNITS[c.bootstrap]})",
    )
    return StabilityResult(
        compare(runs, seeds, sizes, kinds, c.top), runs, head_table(runs, ref_eff, c.top), params, timings
    )


def compare(  # noqa: C901 (one branch per kind of comparison)
    runs: pd.DataFrame, seeds: list[int], sizes: list[int], kinds: list[str], top: int
) -> pd.DataFrame:
    """The Jaccard table (``stability.csv``): one row per comparison of two runs and set (key, top-k)."""
    at = {(r.kind, r.seed, r.size, r.family): r for r in runs.itertuples()}
    big, out = sizes[-1], []

    def add(comparison, a, b):
        if a not in at or b not in at:
            return  # a size with no X_r: nothing to compare
        ra, rb = at[a], at[b]
        for name, col in (("key", "key"), (f"top{top}", "top")):
            sa, sb = set(getattr(ra, col).split()), set(getattr(rb, col).split())
            out.append(
                {
                    "comparison": comparison,
                    "set": name,
                    "kind": a[0],
                    "seed": a[1],
                    "size": a[2],
                    "family": a[3],
                    "ref_kind": b[0],
                    "ref_seed": b[1],
                    "ref_size": b[2],
                    "ref_family": b[3],
                    "jaccard": jaccard(sa, sb),
                    "n_a": len(sa),
                    "n_b": len(sb),
                    "n_shared": len(sa & sb),
                    "prompts_a": int(ra.n),
                    "prompts_b": int(rb.n),
                }
            )

    for kind in kinds:
        for seed in seeds:
            for size in sizes[:-1]:
                add("size_vs_largest", (kind, seed, size, ALL), (kind, seed, big, ALL))
        for size in sizes:
            for s1, s2 in itertools.combinations(seeds, 2):
                add("between_seeds", (kind, s1, size, ALL), (kind, s2, size, ALL))
    if len(kinds) > 1:
        for seed in seeds:
            for size in sizes:
                add("between_kinds", (kinds[0], seed, size, ALL), (kinds[1], seed, size, ALL))
    for kind in kinds:
        for seed in seeds:
            fams = [f for f in dict.fromkeys(runs[(runs.kind == kind) & (runs.seed == seed)].family) if f != ALL]
            for f1, f2 in itertools.combinations(fams, 2):
                add("between_families", (kind, seed, big, f1), (kind, seed, big, f2))
    return pd.DataFrame(out)


def head_table(runs: pd.DataFrame, ref_eff: dict[str, pd.DataFrame], top: int) -> pd.DataFrame:
    """Per kind and head (``stability_heads.csv``): ``runs`` (seed × size runs over every template),
    ``key_runs`` / ``top_runs`` (how many of them call it key / put it in the top ``top``) and shares, and the
    reference run's ``effect, effect_lo, effect_hi, n`` (first seed, largest size)."""
    rows = []
    for kind, eff in ref_eff.items():
        rr = runs[(runs.kind == kind) & (runs.family == ALL)]
        key = pd.Series([h for s in rr.key for h in s.split()]).value_counts()
        tops = pd.Series([h for s in rr.top for h in s.split()]).value_counts()
        for r in eff[eff["head"] != "mlp"].itertuples():
            name = f"{r.layer}.{r.head}"
            k, t = int(key.get(name, 0)), int(tops.get(name, 0))
            rows.append(
                {
                    "kind": kind,
                    "layer": int(r.layer),
                    "head": str(r.head),
                    "name": name,
                    "runs": len(rr),
                    "key_runs": k,
                    "key_share": k / len(rr),
                    "top_runs": t,
                    "top_share": t / len(rr),
                    "effect": r.effect,
                    "effect_lo": r.effect_lo,
                    "effect_hi": r.effect_hi,
                    "n": int(r.n),
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------- verdicts
def claims(table: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Each stability finding decided by one rule, written before the run: at the largest size, a set is
    **stable** (holds) when the mean Jaccard over the compared pairs is ≥ 0.8 and none is below 0.5,
    **unstable** (does not hold) when the mean is < 0.5, inconclusive in between or when no set has a head.
    Rows ``claim, kind, set, rule, here, holds`` per counterfactual (``here``: mean [min, max] over the
    pairs compared, and the X_r prompts per run)."""
    big = int(runs["size"].max())
    out = []
    spec = [
        ("between_seeds", "The {set} is the same for independent draws of prompts (seeds)"),
        ("size_vs_largest", "The {set} of the smallest size matches the largest size's"),
        ("between_kinds", "Operator and operand counterfactuals give the same {set}"),
        ("between_families", "Every template family gives the same {set}"),
    ]
    for comp, text in spec:
        for (kind, name), d in table[table.comparison == comp].groupby(["kind", "set"], sort=False):
            d = d[d["size"] == (int(runs["size"].min()) if comp == "size_vs_largest" else big)]
            if d.empty:
                continue
            j = d.jaccard.dropna()
            what = "key set" if name == "key" else f"top-{name[3:]} set"
            holds = (
                None if j.empty else (True if j.mean() >= 0.8 and j.min() >= 0.5 else False if j.mean() < 0.5 else None)
            )
            here = (
                f"all {len(d)} pairs: no head in either set"
                if j.empty
                else f"Jaccard {j.mean():.2f} [{j.min():.2f}, {j.max():.2f}] over {len(j)} pairs"
                + (f" (and {len(d) - len(j)} with no head in either set)" if len(j) < len(d) else "")
                + f"; {int(d.prompts_a.min())}–{int(d.prompts_a.max())} X_r prompts per run"
            )
            claim = (
                text.format(set=what)
                if comp == "between_kinds"
                else f"{kind.capitalize()} counterfactual: "
                + text.format(set=what)[0].lower()
                + text.format(set=what)[1:]
            )
            out.append(
                {
                    "claim": claim,
                    "kind": kind if comp != "between_kinds" else "both",
                    "set": name,
                    "rule": "holds: mean Jaccard ≥ 0.8 and min ≥ 0.5; does not hold: mean < 0.5",
                    "here": here,
                    "holds": holds,
                }
            )
    return pd.DataFrame(out, columns=["claim", "kind", "set", "rule", "here", "holds"])


# ------------------------------------------------------------------------------------ files & CLI
def write_results(res: StabilityResult, folder: str | Path, extra: dict | None = None, model_name: str | None = None):
    """The step's three files as one set (:func:`arithmech.core.results.write_step`)."""
    record = {
        "parameters": {**res.params, **(extra or {})},
        "versions": provenance.versions(),
        "timings": {k: round(v, 2) for k, v in res.timings.items()},
        "peak_memory": provenance.peak_memory(),
        "estimate": res.estimate,
    }
    files = dict(zip(FILENAMES, (res.table, res.runs, res.heads)))
    return results.write_step(folder, "stability", files, record, model_name=model_name)


def recorded(config: Config) -> dict:
    """What ``run.json`` records of a run made with ``config``: the seeds as the list they expand to, the
    sizes sorted, and :func:`stability`'s fixed choices (template families, only X_r, the answer token)."""
    c = config
    return dict(
        task=c.task,
        seeds=list(range(c.seed, c.seed + c.seeds)),
        sizes=sorted(set(c.sizes)),
        kinds=list(dict.fromkeys(c.kinds)),
        threshold=c.threshold,
        top=c.top,
        n_boot=c.n_boot,
        families=True,
        keep_correct=True,
        answer_token=c.to_draw().answer_token,
        shots=c.shots,
        bootstrap=c.bootstrap,
        **c.to_draw().recorded(),
    )


def summary(result: Result) -> str:
    """The command line's summary of :func:`run`'s result: the table and where it went."""
    folder = results.model_folder(result.config.results, result.config.model_name)
    return (
        result.table.to_string(index=False, max_rows=40) + f"\nwrote stability.csv, stability_runs.csv, "
        f"stability_heads.csv to {folder} in {result.record['timings']['total']:.0f} s"
    )


def run(config: Config, model=None, tok=None) -> Result:
    """Load the model (unless given), run :func:`stability` with seeds ``seed .. seed + seeds - 1`` and write
    the files to the model's results folder (``config.results``: the root or the model's folder); returns the
    :class:`Result` read back from them (:func:`read`)."""
    c = config
    folder = results.model_folder(c.results, c.model_name)
    results.check_writable(folder, "stability", c.overwrite)
    est = admission.check(c)  # refused here when it cannot fit, before the model loads
    t0 = time.time()
    if model is None:
        model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
    announce("stability", est.line() if est else "")
    res = stability(model, tok, c)
    res.estimate = est.record() if est else None
    res.timings["total"] = time.time() - t0
    write_results(
        res, folder, extra={"model": c.model_name, "device": c.device, "dtype": c.dtype}, model_name=c.model_name
    )
    return read(folder, c)
