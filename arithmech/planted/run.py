"""The step: the method scored against a circuit known by construction (``python -m arithmech planted-score``).

Every other chapter asks which heads of the embedded model matter and can only check that the answers agree with each
other. On the planted model (:mod:`arithmech.embedded.planted`) the answer is fixed before training: under the paper's
first answer token, only the three movers can carry the operands to the last position. So each method that names heads
gets a score::

    identify on the planted model (answer token "first")          ── per-prompt path-patching effects
        ├── key heads, paper's rule  (effect's whole 95% interval below the threshold)   ┐
        ├── key heads, share rule    (share's whole 95% interval below the threshold)    │ a found set
        ├── EAP, EAP-IG              (the paper's rule on each estimated effect)          │ per method
    knockout prompts (Fig. 8, operands 1..9)                                              │
        └── one head mean-ablated at a time (accuracy drop's whole interval above 0)     ┘
    found set vs the movers ──► precision, recall, each with a 95% interval over problem clusters
    movers ablated vs random non-planted sets of the same size, none, all, the guessing floor ──► the knockout table

Precision and recall get 95% intervals over problem clusters (:mod:`arithmech.planted.scoring`: each resample
reruns the method's rule on the drawn problems); the knockout, its controls and floor are
:mod:`arithmech.planted.knockout`'s. Identify's rules are applied as identify applies them: on all the prompts the
found sets equal identify's key heads, which :func:`finders` checks.

Files, in ``<results>/<model>/planted_score/`` (each written atomically, ``scores.json`` last; no timings, so a rerun
with the same seed writes the same bytes): ``scores.json`` (the numbers, the verdicts under
:mod:`arithmech.planted.rules`' hash, the command), ``methods.csv``, ``heads.csv``, ``knockout.csv``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from arithmech.core import provenance, results
from arithmech.core.atomic import atomic_json, atomic_write
from arithmech.core.config import command_line
from arithmech.core.models import load_model
from arithmech.core.progress import announce
from arithmech.core.stats import bootstrap_mean_intervals, bootstrap_ratio_intervals
from arithmech.data.batches import answer_ids
from arithmech.data.floors import not_passed
from arithmech.data.splits import resampling_units
from arithmech.embedded import planted as planted_model
from arithmech.embedded import planted_truth
from arithmech.identify.config import Identify
from arithmech.identify.pipeline import identify
from arithmech.methods.attribution import attribute, ig_alphas
from arithmech.methods.patching import end_cache, split_cache
from arithmech.planted import rules as planted_rules
from arithmech.planted.config import PlantedScore as Config
from arithmech.planted.knockout import head_names, knockout
from arithmech.planted.scoring import LEVEL, below, score_finder, share_below

FILES = ("scores.json", "methods.csv", "heads.csv", "knockout.csv")


def folder_of(config: Config) -> Path:
    """``<results>/<model>/planted_score/``."""
    return results.model_folder(config.results, config.model_name) / "planted_score"


def to_identify(config: Config) -> Identify:
    """Identify as the score runs it: the paper's first answer token (where the movers are the exact ground truth), no
    knockout or transfer (the planted knockout is this step's own), identify's thresholds."""
    own = ("model_name", "seed", "device", "dtype", "n_samples", "n_boot", "batch_size")
    return Identify(**{k: getattr(config, k) for k in own}, answer_token="first", knockout=False, transfer=False,
                    prob=False)  # fmt: skip


def attribution_effects(model, tok, samples: list, logit_o: torch.Tensor, ig_steps: int, batch_size: int) -> dict:
    """EAP's and EAP-IG's estimated relative effects ``(n, L, H)`` of every head on ``samples`` (identify's pooled X_r,
    in order), relative to identify's ``logit_o`` ``(n,)`` (:mod:`arithmech.methods.attribution`)."""
    answer = answer_ids(tok, samples)
    prompts = [s.clean for s in samples] + [s.corrupt for s in samples]
    clean, corrupt = split_cache(end_cache(model, tok, prompts, torch.cat([answer, answer]), batch_size), len(samples))
    H = model.config.num_attention_heads
    out = {}
    for name, alphas in (("eap", (0.0,)), ("eap-ig", ig_alphas(ig_steps))):
        out[name] = attribute(model, clean, corrupt, answer, alphas)[..., :H] / logit_o[:, None, None]
    return out


def finders(model, tok, c: Config) -> tuple[dict, dict, dict, list]:
    """Identify on the planted model, then every method's rule as a :data:`Finder` over identify's pooled prompts.
    Returns ``(finders, statistics, identify's record, clusters)`` (``statistics``: per method the ``(mean, lo, hi)``
    ``(L, H)`` its rule reads, on every prompt); checks that the rules on every prompt give identify's key heads."""
    ic = to_identify(c)
    res = identify(model, tok, "all", ic)
    pooled = [s for t in res.key_heads["control"]["pooled"] for s in res.tasks[t]]
    p = res.patched["all"]
    clusters = resampling_units(pooled, "cluster") or [s.clean for s in pooled]  # integer operands: never None
    H = model.config.num_attention_heads
    est = attribution_effects(model, tok, pooled, p.logit_o[:, 0], c.ig_steps, c.batch_size)
    rel, num, den = p.relative_change(warn=False)[..., :H], p.ld_effect()[..., :H], p.ld_total()
    find = {
        "identify-paper": below(rel, ic.threshold, c.n_boot, c.seed),
        "identify-share": share_below(num, den, ic.share_threshold, c.n_boot, c.seed),
        "eap": below(est["eap"], ic.threshold, c.n_boot, c.seed),
        "eap-ig": below(est["eap-ig"], ic.threshold, c.n_boot, c.seed),
    }
    stats = {m: _stats(x, clusters, c.n_boot, c.seed) for m, x in (("identify-paper", rel), *est.items())}
    share_lo, share_hi = bootstrap_ratio_intervals(num, den, c.n_boot, LEVEL, c.seed, clusters)
    stats["identify-share"] = (num.mean(0) / den.mean(), share_lo, share_hi)
    every = list(range(len(pooled)))
    for rule, key in (("identify-paper", res.key_heads), ("identify-share", res.key_heads["by_share"])):
        if find[rule](every, clusters) != {(h["layer"], h["head"]) for h in key["heads"]}:
            raise RuntimeError(f"{rule}: the rule on every prompt does not give identify's key heads")
    record = {
        "tasks_pooled": res.key_heads["control"]["pooled"],
        "failed_control": not_passed(res.key_heads["control"]),
        "kept": {t: len(v) for t, v in res.tasks.items()},
        "threshold": ic.threshold,
        "share_threshold": ic.share_threshold,
        "answer_token": ic.answer_token,
        "key_heads": [h["name"] for h in res.key_heads["heads"]],
        "key_heads_by_share": [h["name"] for h in res.key_heads["by_share"]["heads"]],
        "per_task": per_task(res, c, ic.threshold),
    }
    return find, stats, record, clusters


def per_task(res, c: Config, threshold: float) -> dict:
    """Descriptive, decided by no rule: the paper's rule on each operation's own prompts (those its control leaves out
    of the pooled task too), scored against the movers as the pooled task is."""
    out = {}
    for t, samples in res.tasks.items():
        rel = res.patched[t].relative_change(warn=False)[..., : res.patched[t].logit_p.shape[-1] - 1]
        units = resampling_units(samples, "cluster") or [s.clean for s in samples]
        out[t] = score_finder(
            below(rel, threshold, c.n_boot, c.seed), units, planted_model.MOVERS, c.n_resamples, c.seed
        )
    return out


def heads_table(scores: dict, statistics: dict, model) -> pd.DataFrame:
    """One row per method and head: planted or not, found on every prompt, how often found over the resamples, and the
    statistic its rule reads (mean with its 95% cluster interval)."""
    rows = []
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    for method, s in scores.items():
        found = {tuple(h) for h in s["found"]}
        for l in range(L):
            for h in range(H):
                stat = statistics.get(method)
                m, lo, hi = (None, None, None) if stat is None else (float(x[l, h]) for x in stat)
                rows.append(
                    {"method": method, "layer": l, "head": h, "role": planted_model.role(l, h),
                     "found": (l, h) in found, "found_share": s["found_share"].get(f"{l}.{h}", 0.0), "statistic": m,
                     "lo": lo, "hi": hi}
                )  # fmt: skip
    return pd.DataFrame(rows)


def _stats(x: torch.Tensor, clusters: list, n_boot: int, seed: int) -> tuple:
    lo, hi = bootstrap_mean_intervals(x, n_boot, LEVEL, seed, clusters)
    return x.double().mean(0), lo, hi


def compute(config: Config, **loaded) -> Path:
    """The step (module docstring); ``loaded``: ``model`` and ``tok`` already in memory. Returns the folder."""
    c = config
    out = folder_of(c)
    if (out / "scores.json").exists() and not c.overwrite:
        raise ValueError(f"{out}/scores.json exists: pass --overwrite to replace it")
    torch.set_num_threads(c.threads)
    model, tok = loaded.get("model"), loaded.get("tok")
    if model is None:
        model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype, attn_implementation="sdpa")
    heads = planted_truth.heads(model)
    announce("planted-score", "identify, EAP, EAP-IG")
    find, statistics, ident, clusters = finders(model, tok, c)
    announce("planted-score", "knockout")
    ko, ko_table, x_ko, ko_clusters = knockout(model, tok, c, heads)
    find["knockout-heads"] = below(x_ko, -planted_rules.HEAD_DROP_MIN, c.n_boot, c.seed)
    announce("planted-score", f"precision and recall over {c.n_resamples} cluster resamples")
    scores = {}
    for m in (r.id for r in planted_rules.RECOVERY):
        units = ko_clusters if m == "knockout-heads" else clusters
        scores[m] = score_finder(find[m], units, planted_model.MOVERS, c.n_resamples, c.seed)
    statistics["knockout-heads"] = _stats(-x_ko, ko_clusters, c.n_boot, c.seed)  # the drop, positive: it hurt
    numbers = {"methods": scores, "knockout": ko}
    write_files(out, c, numbers, ident, heads_table(scores, statistics, model), ko_table)
    return out


def _round(obj):
    """Floats rounded to 6 significant digits (the files' precision), tuples as lists, recursively."""
    if isinstance(obj, float):
        return float(f"{obj:.6g}")
    if isinstance(obj, dict):
        return {k: _round(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_round(v) for v in obj]
    return obj


def write_files(  # noqa: PLR0913 (every file of the step, written together)
    out: Path, c: Config, numbers: dict, ident: dict, heads: pd.DataFrame, ko: pd.DataFrame
) -> None:
    """Every file of the step, each atomically; ``scores.json`` last (its presence means the set is whole)."""
    verdicts = planted_rules.decide(numbers)
    methods = pd.DataFrame(
        [
            {"method": r.id, "what": r.method, "found": head_names(s["found"]), "recall": s["recall"]["value"],
             "recall_lo": s["recall"]["lo"], "recall_hi": s["recall"]["hi"], "precision": s["precision"]["value"],
             "precision_lo": s["precision"]["lo"], "precision_hi": s["precision"]["hi"], "n": s["n"],
             "clusters": s["clusters"], "verdict": verdicts[r.id]}
            for r in planted_rules.RECOVERY
            for s in [numbers["methods"][r.id]]
        ]
    )  # fmt: skip
    for name, df in (("methods.csv", methods), ("heads.csv", heads), ("knockout.csv", ko)):
        atomic_write(out / name, df.to_csv(index=False, float_format="%.6g"))
    atomic_json(
        out / "scores.json",
        _round(
            {
                "model": c.model_name,
                "rules_sha256": planted_rules.rules_sha256(),
                "command": command_line("planted-score", c),
                "parameters": json.loads(json.dumps(c.reuse_key(), default=str)),
                "truth": {
                    "planted": head_names(planted_model.PLANTED),
                    "scored_against": head_names(planted_model.MOVERS),
                    "why": "under the first answer token only the movers reach the last position; the composer (0.0) "
                    "reads at operand positions only and writes a constant at the last one",
                },
                "identify": ident,
                "verdicts": verdicts,
                "numbers": numbers,
                "versions": provenance.versions(),
            }
        ),
    )


@dataclass(frozen=True)
class Result:
    """The step's files (:func:`read`): ``scores`` (``scores.json``: numbers, verdicts, the rules' hash, the command),
    ``methods`` (``methods.csv``: one row per method, precision and recall with intervals), ``heads`` (``heads.csv``:
    per method and head, found or not and how often), ``knockout`` (``knockout.csv``: the conditions with intervals);
    ``config``."""

    config: Config
    scores: dict
    methods: pd.DataFrame
    heads: pd.DataFrame
    knockout: pd.DataFrame

    def save(self, folder: str | Path) -> Path:
        """Write the files again into ``folder`` (atomically, ``scores.json`` last): what :func:`read` reads back."""
        f = Path(folder)
        for name, df in (("methods.csv", self.methods), ("heads.csv", self.heads), ("knockout.csv", self.knockout)):
            atomic_write(f / name, df.to_csv(index=False, float_format="%.6g"))
        atomic_json(f / "scores.json", self.scores)
        return f

    @classmethod
    def load(cls, folder: str | Path, config: Config | None = None) -> Result:
        """:func:`read` ``folder`` (``config``: the step's defaults when not given)."""
        return read(folder, config or Config())

    @classmethod
    def stored(cls, config: Config, model_name: str | None = None) -> Result | None:
        """The files the step wrote for ``config``'s model (or ``model_name``'s, scored with ``config``'s other
        parameters: another training seed), read by :func:`read`; ``None`` where it wrote none."""
        folder = results.model_folder(config.results, model_name or config.model_name) / "planted_score"
        return read(folder, config) if (folder / "scores.json").exists() else None


def read(folder: str | Path, config: Config) -> Result:
    """The files of ``folder`` (``<model>/planted_score/``) as a :class:`Result`."""
    f = Path(folder)
    if not (f / "scores.json").exists():
        raise results.ResultsError(f"{f}/scores.json is missing: run python -m arithmech planted-score")
    text = {"found": str, "ablated": str}  # a method that found no head, a row that ablates none: "", not NaN
    csv = {n: pd.read_csv(f / n, dtype=text).fillna({k: "" for k in text}) for n in FILES[1:]}
    return Result(config, json.loads((f / "scores.json").read_text()), *(csv[n] for n in FILES[1:]))


def run(config: Config, **loaded) -> Result:
    """The step, then its files read back."""
    return read(compute(config, **loaded), config)


def summary(result: Result) -> str:
    """Each method's found heads, recall and precision with their intervals and verdict; the knockout rows."""
    lines = []
    show = lambda v, lo, hi: "-" if pd.isna(v) else f"{v:.2f} [{lo:.2f}, {hi:.2f}]"
    for r in result.methods.itertuples():
        lines.append(
            f"{r.method}: found [{r.found}], recall {show(r.recall, r.recall_lo, r.recall_hi)}, precision "
            f"{show(r.precision, r.precision_lo, r.precision_hi)} ({r.clusters} problem clusters): {r.verdict}"
        )
    for r in result.knockout.itertuples():
        lines.append(f"knockout {r.condition}: accuracy {r.accuracy:.1%} [{r.lo:.1%}, {r.hi:.1%}] (n={r.n})")
    return "\n".join(lines + [f"wrote {folder_of(result.config)}/: {', '.join(FILES)}"])
