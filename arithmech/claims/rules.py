"""The paper's claims as rules, decided on a results folder.

Every sentence of the book that states a finding comes from here. A claim is a :class:`Rule`: what the
paper says, and the test that decides it on *this* run — the same for every model. Each rule carries its
``version``; :mod:`arithmech.claims.changelog` says what each version changed, when, and whether the results
it decides existed then (most rules were written or changed after some results existed: the book says so,
computed from the changelog). :func:`claims` reads ``results/<model>/`` through
:mod:`arithmech.core.results` and returns one row per rule::

    id | claim | paper (LLaMA2-7B) | rule | here | holds

``holds`` is ``True`` (holds), ``False`` (does not hold) or ``None`` (inconclusive: the results the rule
needs are missing, or their intervals cannot separate the two outcomes). ``here`` gives the numbers the
rule was applied to, each with its sample size or interval.

A chapter shows :func:`rules_markdown` of its claims *before* its results and the decided rows after
them (:func:`arithmech.report.views.pages.claim_lines`); the tests check that the rendered text and this
table agree.

The rules' texts (:data:`RULES`, and the numbers they print) live in :mod:`arithmech.claims.rule_texts`; this
module holds how each is decided (:data:`DECIDERS`).

Adding or changing a claim: edit its :class:`Rule` in :data:`RULES` (:mod:`arithmech.claims.rule_texts`; a
decider ``ctx -> (here, holds)`` in :data:`DECIDERS` under the same id), then log it in
:data:`arithmech.claims.changelog.CHANGELOG` and bump the rule's ``version``. A decider raises :class:`Missing` when a
file it needs is absent.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from arithmech.claims.analyze import attention_roles, circuit_faithful, stages
from arithmech.claims.controls import ablation_removes as _ablation_removes
from arithmech.claims.controls import answer_token_floor as _answer_token_floor
from arithmech.claims.controls import controlled as _controlled
from arithmech.claims.controls import layer_matched as _layer_matched
from arithmech.claims.evidence import Context, Missing, cluster_interval
from arithmech.claims.evidence import end_rows as _end_rows
from arithmech.claims.finetune import (
    precise_keeps_generic,
    precise_learns_beyond_format,
    precise_learns_math,
    precise_matches_full,
    selection_matters,
)
from arithmech.claims.rule import Rule
from arithmech.claims.rule_texts import (
    AGREE_FAILS,
    AGREE_HOLDS,
    BY_ID,
    FEW_FRACTION,
    RULES,
    SHARE_THRESHOLD,
    THRESHOLD,
    K,
    signed_percent,
)
from arithmech.core.names import components
from arithmech.identify.config import CONTROL_FLOOR, MIN_PROBLEMS
from arithmech.methods.effects import TOP  # "the top heads": the first TOP by effect rank (studied where none is key)
from arithmech.steps.stability import claims as stability_claims


# ------------------------------------------------------------------------------------ deciders
def _key_heads(ctx: Context):
    hd = ctx.heads()
    key = hd[hd["effect_hi"] < THRESHOLD]  # effects.csv v2 always has the interval (v1 is refused)
    names = components(zip(key.layer, key["head"]))
    return (
        f"{len(key)} of {len(hd)} heads have their bootstrap interval below {THRESHOLD:+.0%} ({names}); strongest: "
        f"{hd.effect.iloc[0]:+.1%}; n = {int(hd.n.iloc[0])} prompts",
        len(key) > 0,
    )


def _key_heads_share(ctx: Context):
    hd = ctx.heads()
    if "share_hi" not in hd or hd.share_hi.isna().all():
        raise Missing("effects.csv has no share columns (made before the calibrated measure; re-run identify)")
    hd = hd.sort_values(["share", "layer", "head"], kind="stable")
    key = hd[hd.share_hi < SHARE_THRESHOLD]
    names = components(zip(key.layer, key["head"]))
    return (
        f"{len(key)} of {len(hd)} heads have their LD ratio's bootstrap interval below {SHARE_THRESHOLD:+.0%} "
        f"({names}); strongest LD ratio: {hd.share.iloc[0]:+.1%}; n = {int(hd.n.iloc[0])} "
        "prompts",
        len(key) > 0,
    )


def _concentration(values: pd.Series, k: int) -> tuple[float, int]:
    """The top ``k`` values' share of the sum of the negative parts (values most negative first), and the fewest
    values whose sum reaches half of it."""
    neg = (-values.clip(upper=0)).sort_values(ascending=False, kind="stable")
    cum = neg.cumsum() / max(float(neg.sum()), 1e-12)
    return float(cum.iloc[k - 1]), int((cum < 0.5).sum()) + 1


def _few_heads(ctx: Context):
    """Version 4 (issue #41): the paper's 5% of heads, by both measures (the module's rule text)."""
    hd = ctx.heads()
    k = math.ceil(FEW_FRACTION * len(hd))
    by_effect, least_e = _concentration(hd.logit_diff.reset_index(drop=True), k)
    here = (
        f"the top {k} of {len(hd)} heads ({FEW_FRACTION:.0%}) hold {by_effect:.0%} of the summed negative change "
        f"by the relative change (half by the top {least_e})"
    )
    if "share" not in hd or hd.share.isna().all():
        return here + "; no LD ratio in effects.csv", by_effect >= 0.5
    by_ratio, least_r = _concentration(hd.share.reset_index(drop=True), k)
    here += f", {by_ratio:.0%} by the LD ratio (half by the top {least_r}); n = {int(hd.n.iloc[0])} prompts"
    both = (by_effect >= 0.5, by_ratio >= 0.5)
    return here, True if all(both) else (False if not any(both) else None)


def _median_depth(ctx: Context) -> tuple[float, list[int], int]:
    hd = ctx.heads()
    L = int(ctx.effects().layer.max()) + 1
    layers = sorted(int(l) for l in hd.layer.iloc[:TOP])
    return statistics.median(l / (L - 1) for l in layers), layers, L


def _middle_layers(ctx: Context):
    mid, layers, _ = _median_depth(ctx)
    return f"median depth of the top {TOP}: {mid:.2f} (layers {', '.join(map(str, layers))})", 1 / 3 <= mid <= 2 / 3


def _logit_diff_ranking(ctx: Context):
    """The paper's measure against the calibrated one, on the heads that matter (their top ``TOP``).

    Not Spearman between the relative change and the logit difference over every head (version 1 of this
    rule): both are means of the same per-prompt change of the answer logit, one divided by the prompt's
    unpatched logit, so they rank alike by construction wherever that logit varies little (ρ = 1.00). The
    share's LD also subtracts X_c's answer logit, so the two can disagree — and do on a model whose heads
    move X_c's answer too."""
    hd = ctx.heads()
    if "share" not in hd or hd.share.isna().all():
        raise Missing("effects.csv has no share columns (made before the calibrated measure; re-run identify)")
    by_effect = list(zip(hd.layer.iloc[:TOP], hd["head"].iloc[:TOP]))
    hs = hd.sort_values(["share", "layer", "head"], kind="stable")
    by_share = list(zip(hs.layer.iloc[:TOP], hs["head"].iloc[:TOP]))
    common = len(set(by_effect) & set(by_share))
    only = lambda a, b: components([x for x in a if x not in set(b)])
    here = (
        f"{common} of the top {TOP} heads in common (by the relative change only: {only(by_effect, by_share)}; "
        f"by the LD ratio only: {only(by_share, by_effect)}); n = {int(hd.n.iloc[0])} prompts"
    )
    return here, True if common >= AGREE_HOLDS else (False if common <= AGREE_FAILS else None)


def _knock(ctx: Context, k: int):
    ko = _end_rows(ctx)
    d = ko[(ko.kind == "head") & (ko.k == k)]
    key, rnd = d[d.order == "effect-rank"], d[d.order == "random-rank"]
    if key.empty or rnd.empty:
        raise Missing(f"knockout.csv has no head curve at k = {k}")
    intact = (
        ko[(ko.kind == "sanity") & (ko.order == "nothing-out")].accuracy
        if "sanity" in set(ko.kind)
        else ko[(ko.kind == "head") & (ko.k == 0)].accuracy
    )
    return key.iloc[0], rnd, float(intact.iloc[0]) if len(intact) else float("nan")


def _knockout_key_vs_random(ctx: Context):
    key, rnd, intact = _knock(ctx, K)
    acc, n = float(key.accuracy), int(key.n)
    here = (
        f"accuracy {intact:.0%} → {acc:.0%} (top {K}) vs random {rnd.accuracy.mean():.0%} (lowest "
        f"{rnd.accuracy.min():.0%}, {len(rnd)} draws); n = {n} prompts"
    )
    p5 = float(rnd.accuracy.quantile(0.05))
    lo, hi, what = cluster_interval(key) if "ci_high" in key else (acc, acc, "no interval in the file")
    if acc >= rnd.accuracy.min():  # not below every draw: does it lie within the band?
        here += f"; lower bound {lo:.0%} ({what}) vs 5th percentile {p5:.0%}"
        return _layer_matched(ctx, K, key, here, False if lo >= p5 else None)
    if "ci_high" in key:
        here, holds = here + f"; upper bound {hi:.0%} ({what}) vs 5th percentile {p5:.0%}", (True if hi < p5 else None)
        return _layer_matched(ctx, K, key, here, holds)
    return _layer_matched(ctx, K, key, here, True)


def _knockout_random_flat(ctx: Context):
    _, rnd, intact = _knock(ctx, K)
    m = float(rnd.accuracy.mean())
    return (
        f"random mean {m:.1%} vs intact {intact:.1%} ({len(rnd)} draws, n = {int(rnd.n.iloc[0])} prompts)",
        abs(intact - m) <= 0.02,
    )


def _mlps_late(ctx: Context):
    mid, _, L = _median_depth(ctx)
    e = ctx.effects()
    mlp = e[e["head"] == "mlp"].set_index("layer").logit_diff.abs()
    cut = round(mid * (L - 1))
    late, early = float(mlp[mlp.index > cut].mean()), float(mlp[mlp.index <= cut].mean())
    if mlp[mlp.index > cut].empty:
        return f"no MLP after layer {cut}", False
    return f"mean |logit change| after layer {cut}: {late:.3f} vs up to it: {early:.3f}", late > 2 * early


def _transfer(ctx: Context):
    h = ctx.read("heldout.json")
    if "relative_drop" not in h:
        raise Missing("heldout.json has no knockout result")
    if not h["base_accuracy"] > 0:
        return (
            f"{h['family']}: the model answers none of the {h.get('n', '?')} held-out prompts right, so "
            "knockout has nothing to remove",
            None,
        )
    here = (
        f"{h['family']}: {h['base_accuracy']:.0%} → {h['knockout_accuracy']:.0%} "
        f"({signed_percent(h['relative_drop'])}); {h['n_heads']} random heads: {h['random_accuracy_mean']:.0%}; "
        f"n = {h.get('n', '?')} prompts"
    )
    if h.get("heads_from", "key heads") != "key heads":  # no key head to test: the claim is about them
        return (
            f"no key head to test; knocked out instead: the {h['heads_from'].replace(' (no key head)', '')}: {here}",
            None,
        )
    return here, h["relative_drop"] <= -0.2 and h["knockout_accuracy"] < h["random_accuracy_mean"]


def _stability(ctx: Context, pattern: str, kind: str | None):
    t = stability_claims(ctx.read("stability.csv"), ctx.read("stability_runs.csv"))
    t = t[(t["set"] == "key") & t.claim.str.contains(pattern) & ((t.kind == kind) if kind else True)]
    if t.empty:
        raise Missing("stability.csv has no such comparison")
    r = t.iloc[0]
    return r.here, (None if pd.isna(r.holds) else bool(r.holds))


CONTROLLED = (
    "key-heads-exist",
    "key-heads-exist-share",
    "few-heads",
    "middle-layers",
    "logit-diff-ranking",
    "knockout-key-vs-random",
    "knockout-random-flat",
    "mlps-late",
    "transfer",
    "attention-roles",
    "stages",
)
"""The identify claims made inconclusive where the primary task fails its control (:func:`_controlled`)."""


DECIDERS: dict[str, Callable[[Context], tuple[str, bool | None]]] = {
    **{
        k: _controlled(f)
        for k, f in zip(
            CONTROLLED,
            (
                _key_heads,
                _key_heads_share,
                _few_heads,
                _middle_layers,
                _logit_diff_ranking,
                _knockout_key_vs_random,
                _knockout_random_flat,
                _mlps_late,
                _transfer,
                attention_roles,
                stages,
            ),
        )
    },
    "circuit-faithful": _controlled(circuit_faithful),
    "precise-learns-math": precise_learns_math,
    "precise-learns-beyond-format": precise_learns_beyond_format,
    "precise-matches-full": precise_matches_full,
    "precise-keeps-generic": precise_keeps_generic,
    "selection-matters": selection_matters,
    "key-heads-stable": lambda ctx: _stability(ctx, "independent draws", "operator"),
    "counterfactuals-agree": lambda ctx: _stability(ctx, "Operator and operand", None),
    "answer-token-floor": _answer_token_floor,
    "ablation-removes-information": _ablation_removes,
}


# --------------------------------------------------------------------------------------- public
def claims(folder: str | Path, ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Decide the rules ``ids`` (all of :data:`RULES` by default) on the results in ``folder``.

    Returns rows ``id, claim, paper (LLaMA2-7B), rule, here, holds``; a rule whose files are missing is
    inconclusive with ``here`` saying which file.
    """
    ctx, rows = Context(folder), []
    for rule in select(ids):
        try:
            here, holds = DECIDERS[rule.id](ctx)
        except Missing as e:
            here, holds = f"not measured: {e}", None
        rows.append((rule.id, rule.claim, rule.paper, rule.rule, here, None if holds is None else bool(holds)))
    df = pd.DataFrame(rows, columns=["id", "claim", "paper (LLaMA2-7B)", "rule", "here", "holds"])
    df["holds"] = pd.Series([r[-1] for r in rows], dtype=object)  # True / False / None, never numpy bools
    return df


def select(ids: Iterable[str] | None) -> list[Rule]:
    """The rules named ``ids`` (all when ``None``); an unknown id is a ``ValueError`` naming the known ones."""
    if ids is None:
        return list(RULES)
    ids = list(ids)
    unknown = [i for i in ids if i not in BY_ID]
    if unknown:
        raise ValueError(f"unknown claim id(s) {unknown}; known: {', '.join(BY_ID)}")
    return [BY_ID[i] for i in ids]


def rules_markdown(ids: Iterable[str]) -> str:
    """The rules ``ids`` as a markdown list, each with its version, for a chapter to state *before* its results
    (before them on the page: whether before the results existed is the changelog's to say)."""
    note = lambda r: (
        f"; inconclusive where the task fails its control (floor over distinct problems on its X_r "
        f"could be >= {CONTROL_FLOOR:.0%}: the 95% interval of some reading over its effective problems "
        f"reaches it) or has fewer than {MIN_PROBLEMS} distinct problems"
        if r.id in CONTROLLED + ("circuit-faithful",)
        else ""
    )
    return "\n".join(
        (f"* **{r.claim}** (paper: {r.paper}) — {r.rule}{note(r)} (`{r.id}`, version {r.version}).")
        for r in select(ids)
    )
