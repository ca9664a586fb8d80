"""The files of the results folder, declared once: which step writes each, its format, the columns or keys it
must have, the files it is computed from, and its format version.

:data:`FILES` maps a file's name (relative to ``results/<model>/``) to its :class:`FileSpec`; :data:`STEPS` lists
the steps in the order their files are declared, :data:`WRITTEN_BY` the command that writes each step's files
(named in every "re-run ..." message), and :data:`STR_COLUMNS` the columns read as text. Adding a file: declare
it here; :mod:`arithmech.core.results`, which writes and reads the folder, checks every write and read against
it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileSpec:
    """One file of the results folder: the ``step`` that writes it, its ``kind`` (csv, json, jsonl),
    the columns (csv) or keys (json object / each jsonl row) it must have, and the files it is
    computed from (their hashes are recorded when it is written). ``version``: the file's format, raised
    when it changes; recorded in run.json (``steps.<step>.formats``; absent = 1) and checked by :func:`read`."""

    step: str
    kind: str
    required: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    version: int = 1


# What each step writes. A chapter or command that needs a file reads it with ``read``.
FILES: dict[str, FileSpec] = {
    "prompts.jsonl": FileSpec("identify", "jsonl", ("clean", "corrupt", "answer", "template")),
    # v2: effect_lo / effect_hi, the 95% bootstrap interval of the effect over prompts
    # (key heads: effect_hi < threshold)
    "effects.csv": FileSpec(
        "identify", "csv", ("task", "layer", "head", "effect", "effect_lo", "effect_hi"), version=2
    ),
    "key_heads.json": FileSpec("identify", "json", ("task", "heads")),
    # each head's mean relative change per problem cluster and task (columns "layer.head"): what a cluster bootstrap
    # of the ranking resamples (methods.effects.cluster_effects; the middle-layers rule's interval)
    "effects_clusters.csv": FileSpec("identify", "csv", ("task", "cluster", "n")),
    # per task × template: answer-token and exact-match accuracy, the X_c check's pass rate, the most frequent
    # answer token among the kept prompts and its share (the majority-answer floor; data/answer_tokens.py)
    "answer_tokens.csv": FileSpec(
        "identify",
        "csv",
        (
            "task",
            "template",
            "answer_token",
            "n_drawn",
            "accuracy",
            "exact_match",
            "xc_checked",
            "xc_passed",
            "xc_pass_rate",
            "n",
            "top_token",
            "top_share",
        ),
    ),
    # v2: reference-pool means, sanity rows (kind "sanity"), Wilson intervals, END and every-position rows
    "knockout.csv": FileSpec(
        "identify",
        "csv",
        (
            "task",
            "positions",
            "kind",
            "order",
            "seed",
            "k",
            "accuracy",
            "correct",
            "n",
            "ci_low",
            "ci_high",
            "mean_source",
        ),
        version=2,
    ),
    "transfer.csv": FileSpec("identify", "csv"),
    "heldout.json": FileSpec("identify", "json"),
    "attention_roles.csv": FileSpec(
        "analyze",
        "csv",
        (
            "layer",
            "head",
            "role",
            "mean_score",
            "task",
            "n",
            "se",
            "tokens",
            "density",
            "mass_nofirst",
            "se_nofirst",
            "tokens_nofirst",
            "density_nofirst",
        ),
        ("key_heads.json", "prompts.jsonl"),
    ),
    "attention_baseline.csv": FileSpec(
        "analyze",
        "csv",
        (
            "name",
            "role",
            "measure",
            "view",
            "value",
            "se",
            "n",
            "nonkey_median",
            "nonkey_p05",
            "nonkey_p95",
            "percentile",
            "n_nonkey",
            "verdict",
        ),
        ("key_heads.json", "prompts.jsonl"),
    ),
    "mlp_projection.csv": FileSpec("analyze", "csv", ("layer", "quantity", "value"), ("prompts.jsonl",)),
    "top_numbers.csv": FileSpec("analyze", "csv", ("layer",)),
    "analyze.json": FileSpec("analyze", "json", ("key_heads", "stages"), ("key_heads.json", "prompts.jsonl")),
    "accuracy_by_template.csv": FileSpec("accuracy", "csv", ("op", "template", "n", "accuracy", "ci_low", "ci_high")),
    # the yield of identify's prompts per number of solved examples and operation (arithmech.steps.shots)
    "shots.csv": FileSpec(
        "shots",
        "csv",
        ("shots", "op", "drawn", "token_correct", "correct", "xc_valid", "kept", "kept_rate", "kept_lo", "kept_hi"),
    ),
    "counterfactual_overlap.json": FileSpec("counterfactuals", "json", ("a", "b", "shared")),
    "eap.csv": FileSpec(
        "beyond",
        "csv",
        ("layer", "head", "exact", "eap", "eap_ig", "n"),
        ("prompts.jsonl", "effects.csv", "key_heads.json"),
    ),
    # v2: position (END, A, operator, B): key/value paths at the operand and operator positions besides END's
    "upstream.csv": FileSpec(
        "beyond",
        "csv",
        ("receiver", "position", "path", "sender", "effect"),
        ("prompts.jsonl", "effects.csv", "key_heads.json"),
        version=2,
    ),
    # the Table 1 runner's plan and choices (arithmech.table1.run): suite, tuned/random heads, each
    # arm's learning-rate grid (every value tried, validation scores, the choice, interior or not), runs
    "finetune/table1.json": FileSpec(
        "table1", "json", ("suite", "heads", "arms", "runs"), ("key_heads.json", "effects.csv")
    ),
    # full SFT's validation learning curve and its knee, the arms' step budget (arithmech.table1.run)
    "finetune/curve.json": FileSpec("curve", "json", ("points", "knee", "rule")),
    # the share of the counterfactual's LD effect a circuit recovers: top-n by effect rank and random circuits,
    # noising (mean / resample ablation of the rest), converse, denoising; cluster-bootstrap intervals
    # (arithmech.methods.faithfulness)
    "faithfulness.csv": FileSpec(
        "faithfulness",
        "csv",
        (
            "task",
            "method",
            "ablation",
            "order",
            "draw",
            "n",
            "share",
            "lo",
            "hi",
            "n_prompts",
            "n_clusters",
            "split",
            "components",
        ),
        ("effects.csv", "key_heads.json"),
    ),
    # the knockout cross-fitted over identify's ranking-side problem clusters: per fold x ablation x held-out
    # cluster, prompts, top-1 hits and mean logit difference (arithmech.methods.ablation.crossfit)
    "knockout_crossfit.csv": FileSpec(
        "crossfit",
        "csv",
        ("task", "fold", "order", "seed", "k", "cluster", "n", "correct", "ld", "heads"),
        ("effects_clusters.csv", "prompts.jsonl", "key_heads.json"),
    ),
    "stability.csv": FileSpec("stability", "csv", ("comparison", "set", "kind", "seed", "size", "family", "jaccard")),
    "stability_runs.csv": FileSpec("stability", "csv", ("kind", "seed", "size", "family", "n", "key", "top")),
    "stability_heads.csv": FileSpec("stability", "csv", ("kind", "layer", "head", "key_share", "effect_hi")),
}
# Columns read as text (``1.0`` is head 0 of layer 1, not a number; ``mlp`` sits among head indices).
STR_COLUMNS = {
    "effects.csv": {"head": str},
    "effects_clusters.csv": {"task": str, "cluster": str},
    "eap.csv": {"head": str},
    "attention_baseline.csv": {"name": str},
    "upstream.csv": {"receiver": str, "sender": str, "sender_head": str, "position": str},
    "answer_tokens.csv": {"task": str, "template": str, "top_token": str},  # "0" is a token
    "stability_heads.csv": {"head": str, "name": str},
    "faithfulness.csv": {"components": str},
    "knockout_crossfit.csv": {"task": str, "order": str, "cluster": str, "heads": str},
    "stability_runs.csv": {"key": str, "top": str},
    "top_numbers.csv": {"token": str},
}
STEPS = tuple(dict.fromkeys(s.step for s in FILES.values()))
WRITTEN_BY = {
    "identify": "python -m arithmech identify",
    "analyze": "python -m arithmech analyze",
    "accuracy": "python -m arithmech accuracy-by-template",
    "counterfactuals": "python -m arithmech counterfactuals",
    "beyond": "python -m arithmech beyond",
    "table1": "python -m arithmech table1",
    "curve": "python -m arithmech table1 --curve-only",
    "stability": "python -m arithmech stability",
    "faithfulness": "python -m arithmech faithfulness",
    "crossfit": "python -m arithmech crossfit",
    "shots": "python -m arithmech shots",
}
