"""The Data chapter's page: every table, chart and sentence of ``book/data.md``, one call per cell.

:func:`templates` is the template table (no model); :func:`draw` loads the chapter's model and draws its pairs
into a dict ``d`` (``net``, ``tok``, ``samples``, ``stats``, the config ``P``) that the other functions read.
Each returns what its cell shows: a sentence (the cell prints it), a Markdown block, a DataFrame or Styler, or an
altair chart::

    >>> d = draw(P)
    >>> print(draw_line(d)); forms(d); print(accuracy_line(d)); accuracy_chart(d)
"""

from __future__ import annotations

import json
from typing import Any

import altair as alt
import pandas as pd
from pandas.io.formats.style import Styler

from arithmech.core.models import load_model
from arithmech.core.names import EMBEDDED_DIR, token_label
from arithmech.core.results import exists, model_folder
from arithmech.data import templates as figure_templates
from arithmech.data.draw import Draw
from arithmech.data.pairs import make_pairs, select_templates
from arithmech.embedded import heldout as heldout_pairs
from arithmech.evals.scoring import filter_correct
from arithmech.pipeline.ensure import ensure
from arithmech.prompts.config import Shots as ShotsConfig
from arithmech.report.build.chapters import Data as DataChapter
from arithmech.report.charts.accuracy_chart import template_accuracy_chart
from arithmech.report.views.cells import markdown
from arithmech.report.views.pages import chapter_end
from arithmech.steps import shots as shots_step

SHIPPED = "smollm2-135m"  # the other model whose shipped shots.csv the yield section shows beside the chapter's


def templates() -> pd.DataFrame:
    """The 48 template pairs of Fig. 8 and Fig. 10, one row each: figure, id, operation, form, X_r and X_c."""
    return pd.DataFrame(
        [
            {
                "figure": "Fig. 8" if t in figure_templates.FIG8 else "Fig. 10",
                "id": t.id,
                "operation": t.op,
                "form": t.family,
                "X_r (reference)": t.clean,
                "X_c (counterfactual)": t.corrupt,
            }
            for t in figure_templates.FIG8 + figure_templates.FIG10
        ]
    )


def draw(P: DataChapter) -> dict:
    """Load ``P.model_name`` and draw ``P.n_per_template`` pairs per template of every operation (seed ``P.seed``,
    answer token ``P.answer_token``)."""
    net, tok, _ = load_model(P.model_name, device=P.device, dtype=P.dtype)
    tpls = select_templates("all")
    samples, stats = make_pairs(tok, tpls, n=P.n_per_template * len(tpls), seed=P.seed, draw=Draw(P.answer_token, 0, 1))
    return {"P": P, "net": net, "tok": tok, "tpls": tpls, "samples": samples, "stats": stats}


def draw_line(d: dict) -> str:
    """How many pairs were drawn and how many draws were redone for a counterfactual of another token length."""
    stats = d["stats"]
    return (
        f"{stats.made} pairs from {len(d['tpls'])} templates; {stats.redrawn} draws were redone because the "
        f"counterfactual had another token length ({len(stats.per_template)} templates needed a redraw)"
    )


def forms(d: dict) -> Styler:
    """The first drawn pair of each form: prompts, answer, token counts and the dataset's token positions."""
    first_of_form: dict[str, Any] = {}
    for s in d["samples"]:
        first_of_form.setdefault(s.family, s)
    tok = d["tok"]
    return pd.DataFrame(
        [
            {
                "form": s.family,
                "template": s.template,
                "X_r": s.clean,
                "X_c": s.corrupt,
                "answer {C}": s.answer,
                "tokens X_r": len(tok(s.clean)["input_ids"]),
                "tokens X_c": len(tok(s.corrupt)["input_ids"]),
                "positions": ", ".join(
                    f"{k} {'/'.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
                    for k, v in s.positions.items()
                ),
            }
            for s in first_of_form.values()
        ]
    ).style.hide(axis="index")


def tokens(d: dict) -> pd.DataFrame:
    """The first pair's X_r and X_c token by token: one column per position, "␣" a space."""
    s, tok = d["samples"][0], d["tok"]
    pieces = {
        row: [token_label(t) for t in tok.convert_ids_to_tokens(tok(text)["input_ids"])]
        for row, text in (("X_r", s.clean), ("X_c", s.corrupt))
    }
    return pd.DataFrame(pieces).T.rename_axis(columns="position")


def _scored(d: dict) -> dict:
    """``d`` with ``kept`` (the pairs answered right) and ``by_template`` (each template's accuracy), scored once."""
    if "kept" not in d:
        kept, acc = filter_correct(d["net"], d["tok"], d["samples"])
        by_template = templates()[["figure", "id", "operation", "form"]].rename(
            columns={"id": "template", "operation": "op", "form": "family"}
        )
        by_template["accuracy"] = by_template["template"].map(acc)
        d.update(kept=kept, by_template=by_template)
    return d


def accuracy_line(d: dict) -> str:
    """How many pairs the model answers right, beside the paper's 82 %."""
    _scored(d)
    kept, samples = d["kept"], d["samples"]
    return (
        f"{d['P'].model_name}: {len(kept)}/{len(samples)} pairs answered correctly ({len(kept) / len(samples):.1%}); "
        f"paper: 82% probability on the right answer on average, across its models (§3)"
    )


def accuracy_chart(d: dict) -> alt.TopLevelMixin:
    """Each template's accuracy on the drawn pairs."""
    return template_accuracy_chart(_scored(d)["by_template"], d["P"].model_name)


def shots_rule() -> Any:
    """The yield rule of the shots step and what "can do" means, as a quote."""
    return markdown(
        f"> {shots_step.RULE[0].upper() + shots_step.RULE[1:]}. An operation the model *can do* at K "
        f"keeps at least {shots_step.CAN_DO:.0%} of its draws (Wilson lower bound)."
    )


def yield_view(choice: shots_step.Result) -> pd.DataFrame:
    """One shots run's yield: K by operation, "k of n (Wilson 95 %)" kept."""
    y = choice.table
    return (
        y.assign(
            kept=[f"{k} of {n} ({lo:.0%}–{hi:.0%})" for k, n, lo, hi in zip(y.kept, y.drawn, y.kept_lo, y.kept_hi)]
        )
        .pivot(index="shots", columns="op", values="kept")
        .rename_axis(index="K", columns=None)
    )


def yields(d: dict) -> list:
    """The yield of solved examples on the chapter's model (the shots step at ``P.yield_per_template``) and on
    SmolLM2 from its shipped ``shots.csv`` when it is there: per model, the K the rule picks and the table."""
    P = d["P"]
    chosen = {P.model_name: ensure(P.to_shots(), model=d["net"], tok=d["tok"])}
    if P.model_name != SHIPPED and exists(model_folder("results", SHIPPED), "shots.csv"):
        chosen[SHIPPED] = ensure(ShotsConfig(model_name=SHIPPED, seed=P.seed))  # the shipped table
    return [
        x for m, c in chosen.items() for x in (markdown(f"**{m}**: the rule picks **K = {c.shots}**"), yield_view(c))
    ]


def readme() -> Any:
    """The embedded model's card."""
    return markdown((EMBEDDED_DIR / "README.md").read_text())


def accuracy_file() -> dict:
    """The embedded model's ``accuracy.json``."""
    return json.loads((EMBEDDED_DIR / "accuracy.json").read_text())


def _row(what: str, measure: str, p: dict) -> dict:
    return {
        "what": what,
        "measure": measure,
        "n": p["n"],
        "accuracy": p["acc"],
        "95% interval": f"[{p['lo']:.1%}, {p['hi']:.1%}]",
    }


def heldout_table() -> Styler:
    """The embedded model's accuracies with Wilson intervals: trained draws, per operation, each held-out split by
    answer token and exact match, generic facts and two-digit problems."""
    a = accuracy_file()
    held = a["heldout"]["splits"]
    return (
        pd.DataFrame(
            [
                _row(
                    "in-distribution draws (trained pairs and templates)",
                    "answer token",
                    a["arithmetic_answer_token_interval"],
                ),
                *[_row(f"  {op}", "answer token", p) for op, p in a["by_operation_interval"].items()],
                *[
                    _row(heldout_pairs.LABELS[s], m.replace("_", " "), held[s][m])
                    for s in heldout_pairs.SPLITS
                    for m in ("answer_token", "exact_match")
                ],
                _row("generic facts (the model's MMLU)", "answer token", a["generic_fact_interval"]),
                _row("two-digit problems, never trained (the model's GSM8K)", "exact match", a["two_digit_interval"]),
            ]
        )
        .style.format({"accuracy": "{:.1%}"})
        .hide(axis="index")
    )


def cite(p: dict) -> str:
    """An accuracy with its interval and count: "95.0% [90.1%, 97.6%] of 200"."""
    return f"{p['acc']:.1%} [{p['lo']:.1%}, {p['hi']:.1%}] of {p['n']}"


def _splits() -> tuple[dict, dict, dict]:
    held = accuracy_file()["heldout"]["splits"]
    return tuple(held[s]["exact_match"] for s in ("heldout_pairs", "heldout_phrasings", "heldout_both"))


def heldout_paragraph() -> Any:
    """The held-out test in words: trained draws, each held-out split's exact match and the rule's verdicts."""
    a = accuracy_file()
    held = a["heldout"]["splits"]
    pairs, phr, both = _splits()
    per_op = ", ".join(f"{op} {cite(v['exact_match'])}" for op, v in held["heldout_pairs"]["by_operation"].items())
    return markdown(
        f"On draws of its own training templates with trained operand pairs the model answers "
        f"{cite(a['arithmetic_answer_token_interval'])} prompts with the right answer token; those are training "
        f"sentences, so this is not a test. On what training never showed it (declared in its card), greedy decoding "
        f"writes the whole answer for {cite(pairs)} prompts of held-out operand pairs in the training templates "
        f"({per_op}), {cite(phr)} prompts of trained pairs in held-out phrasings, and {cite(both)} with both held out. "
        f"The rule fixed before training — held-out exact match at least {heldout_pairs.TARGET:.0%} (Wilson interval "
        "above it) "
        f"— **{heldout_pairs.verdict(pairs)}** for held-out pairs, **{heldout_pairs.verdict(phr)}** for held-out "
        "phrasings and "
        f"**{heldout_pairs.verdict(both)}** for both. Drawn as the chapters draw them (held-out pairs included) it "
        "answers "
        f"{a['all_pairs_answer_token_accuracy']:.1%} of {a['all_pairs_n_samples']} prompts by the answer token; "
        f"the filter to X_r drops the rest."
    )


def end(d: dict) -> None:
    """The chapter's findings (:func:`arithmech.report.views.pages.chapter_end`): templates, pairs, accuracy,
    the weakest template and the held-out test."""
    P, stats, t = d["P"], d["stats"], templates()
    kept, samples, by_template = _scored(d)["kept"], d["samples"], d["by_template"]
    pairs, phr, _ = _splits()
    chapter_end(
        [
            f"{len(t)} templates ({(t.figure == 'Fig. 8').sum()} of Fig. 8, {(t.figure == 'Fig. 10').sum()} of "
            "Fig. 10), each with a counterfactual of the same token length.",
            f"{stats.made} pairs drawn ({P.n_per_template} per template, seed {P.seed}); {stats.redrawn} draws "
            "redone for a token-length mismatch.",
            f"{P.model_name} answers {len(kept)} of {len(samples)} pairs right ({len(kept) / len(samples):.1%}): "
            "these form $X_r$.",
            f"Lowest template accuracy: {by_template.accuracy.min():.0%} "
            f"({by_template.loc[by_template.accuracy.idxmin(), 'template']}, n = {P.n_per_template} draws per "
            "template).",
            f"Held-out test of the embedded model (rule: exact match ≥ {heldout_pairs.TARGET:.0%}): held-out operand "
            "pairs "
            f"{cite(pairs)}, **{heldout_pairs.verdict(pairs)}**; held-out phrasings {cite(phr)}, "
            f"**{heldout_pairs.verdict(phr)}**.",
        ],
        P.model_name,
        P,
    )
