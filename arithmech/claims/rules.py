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

Adding or changing a claim: edit its :class:`Rule` in :data:`RULES` (a decider ``ctx -> (here, holds)`` in
:data:`DECIDERS` under the same id), then log it in :data:`arithmech.claims.changelog.CHANGELOG` and bump the
rule's ``version``. A decider raises :class:`Missing` when a file it needs is absent.
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
from arithmech.claims.finetune import precise_keeps_generic, precise_matches_full, selection_matters
from arithmech.claims.rule import Rule
from arithmech.core.names import components
from arithmech.methods.effects import TOP  # "the top heads": the first TOP by effect rank (studied where none is key)
from arithmech.paper import KEY_THRESHOLD
from arithmech.steps.config import CONTROL_FLOOR, MIN_PROBLEMS, Identify
from arithmech.steps.stability import claims as stability_claims

THRESHOLD = KEY_THRESHOLD  # the paper's key-head threshold (relative change of the answer logit)
SHARE_THRESHOLD = Identify.share_threshold  # the LD-ratio rule's: a ratio to the counterfactual's LD effect
FEW_FRACTION = 0.05        # few-heads: the paper's "below 5% of heads" (Fig. 2), scaled to each model
_PCT = lambda x: f"{x:+.0%}".replace("-", "−")
K = 8                      # heads knocked out in the knockout claims
AGREE_HOLDS, AGREE_FAILS = 8, 5   # logit-diff-ranking: top-TOP heads two measures must share (holds) / at most (fails)


_CUT = ("; a rate the plan cuts (--no-replicate-ends: not in table1.json's replicated) is outside the grid "
        "these rules read and outside N")
_CROSSED = ("; every interval is crossed (claims/curves.py, seventh version): the spread of the run means plus the spread "
            "over the shared test items of the per-item change (of the per-item difference, for two points), "
            "Welch–Satterthwaite degrees of freedom")
RULES: tuple[Rule, ...] = (
    Rule("key-heads-exist", "Some heads pass the key-head threshold", "≈ 32 of 1024 heads below −5% (head 12.22: −14.0%)",
         "holds iff at least one head's effect is below −5% (with its bootstrap interval entirely below −5% where "
         "effects.csv has intervals); does not hold iff none is", version=7),
    Rule("key-heads-exist-share", "Some heads pass the key-head threshold, measured as a ratio to the "
         "counterfactual's effect", "not measured in the paper (the LD ratio, beside the paper's measure)",
         "a head's LD ratio = (mean over prompts of its change of LD = logit(answer) − logit(X_c's answer) when it "
         "alone is patched) / (mean change of LD by the whole counterfactual), −1 when patching it alone moves LD "
         "as much as the whole counterfactual; heads are patched one at a time, so the ratios of several heads need "
         "not add up (they are not shares of one effect: effects.csv's column is still named share); holds iff at "
         f"least one head's bootstrap interval of its ratio lies entirely below {_PCT(SHARE_THRESHOLD)}; does not "
         "hold iff none does; inconclusive where effects.csv has no share column (results made before it was "
         "measured)", version=7),
    Rule("few-heads", "A few heads carry the effect", "few key heads among 1024 (Fig. 2: below 5% of heads)",
         f"scaled to the model: the top {FEW_FRACTION:.0%} of its heads (rounded up), the paper's fraction; their "
         "concentration = their sum of negative one-at-a-time changes over every head's (a concentration of the "
         "ranking, not a fraction of the effect: one-at-a-time changes need not add up), by the paper's relative "
         "change and by the LD ratio, each ranked by its own measure: holds iff both are ≥ 50%, does not hold iff "
         "both are below; inconclusive where they disagree (decided on the first alone where effects.csv has no "
         "LD ratio); no interval (effects.csv keeps no per-prompt effects)", version=7),
    Rule("middle-layers", "The top heads sit in the middle layers", "layers 12–17 of 32 (depth 0.38–0.53)",
         f"holds iff the median relative depth layer/(L−1) of the top {TOP} heads lies in the middle third "
         "[1/3, 2/3]", version=8),
    Rule("logit-diff-ranking", "The paper's relative change and the LD ratio pick the same top heads",
         "ranks by the relative change (§4.1)",
         f"the top {TOP} heads by the paper's relative change of the answer logit against the top {TOP} by their ratio "
         "to the counterfactual's LD effect (LD = logit(answer) − logit(X_c's answer), which also moves with X_c's "
         f"answer): holds iff they share ≥ {AGREE_HOLDS} heads, does not hold iff ≤ {AGREE_FAILS}; inconclusive in "
         "between (ranks near the cut are within noise) and where effects.csv has no share", version=8),
    Rule("knockout-key-vs-random", f"Knocking out the top {K} heads hurts more than {K} random ones",
         "sharp drop by effect rank (Fig. 3)",
         f"holds iff the accuracy with the top {K} heads out lies below every random draw of {K} heads outside the "
         f"top {K} and the key heads (and, where "
         "the file has intervals, its Wilson interval lies below the random draws' 5th percentile — over the problem "
         "clusters where the file counts them, as if each problem's prompts were one trial); does not hold iff it "
         "lies at or above the lowest draw and its interval's lower end at or above the draws' 5th percentile (it "
         "cannot lie below the band); inconclusive in between; the same test against layer-matched random "
         f"draws (as many heads in each layer as the top {K}, outside them and the key heads) where knockout.csv has "
         "them (both must hold; either failing: does not hold), else those are 'not run'", version=11),
    Rule("knockout-random-flat", f"Random knockout of {K} heads keeps accuracy within 2 points",
         "within 2% (Fig. 3)", f"holds iff the mean accuracy over random draws of {K} heads (outside the top {K} and "
         "the key heads) is within 2 points of "
         "the intact accuracy", version=9),
    Rule("mlps-late", "MLPs after the top heads matter more than those before", "MLPs 0–16 ≈ ±0%, after 17 ≈ ±10%",
         f"holds iff the mean |logit change| of the MLPs after the median layer of the top {TOP} heads is more than "
         "twice that of the MLPs up to it", version=7),
    Rule("transfer", "Key heads transfer to an unseen template family", "SVAMP: −66% relative after knockout",
         "holds iff knocking the key heads (found without the held-out family) out lowers the held-out family's "
         "accuracy by ≥ 20% relative and below the mean of as many random heads; inconclusive without key heads", version=8),
    Rule("attention-roles", "Key heads read operands or operators more than the other heads",
         "heads 13.11 and 12.22 read the operands, heads 14.2 and 11.8 the operator (Fig. 5)",
         "decided on the heads that carry the effect: the paper's key heads, or where its rule finds none the share "
         "rule's key heads (said so); a head reads a role when its END attention mass on it (first position "
         "excluded, rows renormalised) minus two standard errors lies above the upper end of the 95% interval of "
         "the other heads' 95th percentile (the other heads resampled), and does not when its mass plus two "
         "standard errors lies below the lower end; holds iff at least half of the analysed heads read the "
         "operands or the operator; does not hold iff fewer than half could (counting the inconclusive ones too); "
         "inconclusive otherwise, and without key heads under either rule; measured on the prompts of the operations "
         "that pass identify's control, where the heads were ranked", version=7),
    Rule("stages", "Heads collect operands, then MLPs write the answer", "start–inflection–end 13-18-28 for both",
         "holds iff the inflection layer of the answer curve is at or after that of the operand curve (App. C), "
         "measured on the prompts of the operations that pass identify's control", version=4),
    Rule("precise-matches-full", "Precise SFT improves math about as much as full SFT",
         "+15 points on average, ≥ full SFT (Table 1)",
         "over whole learning-rate grids (claims/curves.py, rule 2): holds iff some rate of precise-key is, against "
         "every rate of full SFT, at most 5 points below it (interval of precise − full on the primary math measure over runs and the shared test items, ≥ 3 runs a point: lower end above −5 points); does not hold iff every precise-key rate "
         "lies more than 5 points below some full rate (upper end below −5); inconclusive otherwise, and when leaving "
         "out any one grid point's runs gives the opposite verdict; collapsed points decide nothing; every interval the rule reads is at level 1 − 0.05/N for the N intervals it reads over the whole grid (Bonferroni: a verdict either way is wrong with probability at most 5%), leave-one-rate-out at the same N; a point collapsed when more than half of its runs did, and every run enters its point's mean and interval, collapsed or not (at least 3 runs)" + _CUT + _CROSSED, version=12),
    Rule("selection-matters", "The identified heads matter for precise SFT (beyond the paper)",
         "not tested (no random-head arm)",
         "over whole learning-rate grids (claims/curves.py, rule 4): holds iff some rate of precise-key beats every "
         "rate of precise-random (layer-matched random heads, draws and seeds as runs) on the primary math measure "
         "(interval of key − random over runs and the shared test items, ≥ 3 runs a point: above 0); does not hold iff at every "
         "key rate some random rate comes within +5 points (upper end below +5); inconclusive otherwise, and when "
         "leaving out any one grid point's runs gives the opposite verdict; every interval the rule reads is at level 1 − 0.05/N for the N intervals it reads over the whole grid (Bonferroni: a verdict either way is wrong with probability at most 5%), leave-one-rate-out at the same N; a point collapsed when more than half of its runs did, and every run enters its point's mean and interval, collapsed or not (at least 3 runs)" + _CUT + _CROSSED, version=10),
    Rule("precise-keeps-generic", "Full SFT costs generic skill, precise SFT keeps it",
         "MMLU/CSQA: full −5.5/−5.8, precise +0.4/−0.2 (Table 1)",
         "over whole learning-rate grids (claims/curves.py, rule 3), both halves: (a) full SFT costs general skill "
         "at some rate (interval over runs and test items of its primary general change below 0, or a collapsed run at a rate of ≥ 3 runs; does not iff "
         "every rate's lower end is above −5 points) and (b) some precise-key rate that learns the skill is "
         "dominated by no full-SFT rate (dominated: full's math gain and general change both decidedly above it, "
         "intervals of the difference above 0); holds iff both hold, does not hold iff either does not; inconclusive "
         "otherwise, and when leaving out any one grid point's runs gives the opposite verdict; every interval the rule reads is at level 1 − 0.05/N for the N intervals it reads over the whole grid (Bonferroni: a verdict either way is wrong with probability at most 5%), leave-one-rate-out at the same N; a point collapsed when more than half of its runs did, and every run enters its point's mean and interval, collapsed or not (at least 3 runs)" + _CUT + _CROSSED, version=12),
)
# Beyond the paper: is the key-head set a stable measurement? (arithmech.steps.stability)
RULES += (
    Rule("key-heads-stable", "The key heads are the same for independent draws of prompts",
         "one draw, no interval (Fig. 2)",
         "operator counterfactual, largest sample size, key sets (whole bootstrap interval below −5%) of ≥ 3 seeds: "
         "holds iff their mean pairwise Jaccard overlap is ≥ 0.8 and none is below 0.5; does not hold iff the mean "
         "is below 0.5; inconclusive otherwise or when no run finds a key head", version=2),
    Rule("counterfactuals-agree", "Operator and operand counterfactuals find the same key heads",
         "operator counterfactual only (§4.1)",
         "same seed and size, key sets of the two counterfactuals: holds iff the mean Jaccard over seeds is ≥ 0.8 "
         "and none is below 0.5; does not hold iff the mean is below 0.5; inconclusive otherwise", version=1),
)
# Controls: not claims of the paper, but conditions without which its claims cannot be read.
RULES += (
    Rule("answer-token-floor", "No single answer token covers the task (control)",
         "not reported (the paper's {C} is the answer's first token)",
         "on the kept prompts of each task, the share of the most frequent answer token — the accuracy of always "
         "answering it — has its Wilson interval below 1/3 (holds), above 1/3 (does not hold), else inconclusive", version=1),
    Rule("ablation-removes-information", "Mean ablation of every head removes the task (control)",
         "mean ablation over counterfactual data (§4.1)",
         "holds iff, at END, the Wilson interval of the accuracy with every head mean-ablated lies at or below the "
         "upper end of the floor's simultaneous 95% interval — the floor is the higher of the majority floor (always answering the most frequent answer "
         "token; Wilson over the knockout prompts' problem clusters) and the floor over distinct problems (the draw "
         "population's most probable answer token given the operation, the carried digits and one operand; the "
         "control's; task all: the pooled tasks' mixture by their share of the prompts), every sampled estimate at "
         "1 − 0.05/m for their number m, its interval [the higher lower end, the higher upper end] — and reaches up to a uniform guess among the task's answer tokens; does not hold iff it lies "
         "entirely above the floor's upper end (removes too little) or entirely below the uniform guess "
         "(over-ablation: more than the task removed); inconclusive where it straddles the floor's upper end; the ablated interval is over the problem clusters where "
         "knockout.csv counts them (as if each problem's prompts were one trial); inconclusive for a task that fails "
         f"its control (floor over distinct problems on its X_r could be >= {CONTROL_FLOOR}: the 95% interval of "
         f"some reading over its effective problems reaches it) or has fewer than {MIN_PROBLEMS} distinct problems, "
         f"and with fewer than {MIN_PROBLEMS} problem clusters among the knockout prompts", version=8),
)
BY_ID = {r.id: r for r in RULES}
ADDED = ("key-heads-exist-share", "logit-diff-ranking", "key-heads-stable", "counterfactuals-agree", "circuit-faithful",
         "selection-matters")
"""Claims this book adds, not the paper's (issue #41): counted apart from the paper's own claims
(:func:`arithmech.report.views.pages.tally`)."""


# ------------------------------------------------------------------------------------ deciders
def _key_heads(ctx: Context):
    hd = ctx.heads()
    key = hd[hd["effect_hi"] < THRESHOLD]          # effects.csv v2 always has the interval (v1 is refused)
    names = components(zip(key.layer, key["head"]))
    return (f"{len(key)} of {len(hd)} heads have their bootstrap interval below {THRESHOLD:+.0%} ({names}); strongest: "
            f"{hd.effect.iloc[0]:+.1%}; n = {int(hd.n.iloc[0])} prompts", len(key) > 0)


def _key_heads_share(ctx: Context):
    hd = ctx.heads()
    if "share_hi" not in hd or hd.share_hi.isna().all():
        raise Missing("effects.csv has no share columns (made before the calibrated measure; re-run identify)")
    hd = hd.sort_values(["share", "layer", "head"], kind="stable")
    key = hd[hd.share_hi < SHARE_THRESHOLD]
    names = components(zip(key.layer, key["head"]))
    return (f"{len(key)} of {len(hd)} heads have their LD ratio's bootstrap interval below {SHARE_THRESHOLD:+.0%} "
            f"({names}); strongest LD ratio: {hd.share.iloc[0]:+.1%}; n = {int(hd.n.iloc[0])} "
            "prompts", len(key) > 0)


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
    here = (f"the top {k} of {len(hd)} heads ({FEW_FRACTION:.0%}) hold {by_effect:.0%} of the summed negative change "
            f"by the relative change (half by the top {least_e})")
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
    here = (f"{common} of the top {TOP} heads in common (by the relative change only: {only(by_effect, by_share)}; "
            f"by the LD ratio only: {only(by_share, by_effect)}); n = {int(hd.n.iloc[0])} prompts")
    return here, True if common >= AGREE_HOLDS else (False if common <= AGREE_FAILS else None)


def _knock(ctx: Context, k: int):
    ko = _end_rows(ctx)
    d = ko[(ko.kind == "head") & (ko.k == k)]
    key, rnd = d[d.order == "effect-rank"], d[d.order == "random-rank"]
    if key.empty or rnd.empty:
        raise Missing(f"knockout.csv has no head curve at k = {k}")
    intact = ko[(ko.kind == "sanity") & (ko.order == "nothing-out")].accuracy if "sanity" in set(ko.kind) else \
        ko[(ko.kind == "head") & (ko.k == 0)].accuracy
    return key.iloc[0], rnd, float(intact.iloc[0]) if len(intact) else float("nan")


def _knockout_key_vs_random(ctx: Context):
    key, rnd, intact = _knock(ctx, K)
    acc, n = float(key.accuracy), int(key.n)
    here = (f"accuracy {intact:.0%} → {acc:.0%} (top {K}) vs random {rnd.accuracy.mean():.0%} (lowest "
            f"{rnd.accuracy.min():.0%}, {len(rnd)} draws); n = {n} prompts")
    p5 = float(rnd.accuracy.quantile(0.05))
    lo, hi, what = cluster_interval(key) if "ci_high" in key else (acc, acc, "no interval in the file")
    if acc >= rnd.accuracy.min():                       # not below every draw: does it lie within the band?
        here += f"; lower bound {lo:.0%} ({what}) vs 5th percentile {p5:.0%}"
        return _layer_matched(ctx, K, key, here, False if lo >= p5 else None)
    if "ci_high" in key:
        here, holds = here + f"; upper bound {hi:.0%} ({what}) vs 5th percentile {p5:.0%}", (True if hi < p5 else None)
        return _layer_matched(ctx, K, key, here, holds)
    return _layer_matched(ctx, K, key, here, True)


def _knockout_random_flat(ctx: Context):
    _, rnd, intact = _knock(ctx, K)
    m = float(rnd.accuracy.mean())
    return (f"random mean {m:.1%} vs intact {intact:.1%} ({len(rnd)} draws, n = {int(rnd.n.iloc[0])} prompts)",
            abs(intact - m) <= 0.02)


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
        return (f"{h['family']}: the model answers none of the {h.get('n', '?')} held-out prompts right, so "
                "knockout has nothing to remove", None)
    here = (f"{h['family']}: {h['base_accuracy']:.0%} → {h['knockout_accuracy']:.0%} ({_PCT(h['relative_drop'])}); "
            f"{h['n_heads']} random heads: {h['random_accuracy_mean']:.0%}; n = {h.get('n', '?')} prompts")
    if h.get("heads_from", "key heads") != "key heads":          # no key head to test: the claim is about them
        return (f"no key head to test; knocked out instead: the {h['heads_from'].replace(' (no key head)', '')}: "
                f"{here}", None)
    return here, h["relative_drop"] <= -0.2 and h["knockout_accuracy"] < h["random_accuracy_mean"]


def _stability(ctx: Context, pattern: str, kind: str | None):
    t = stability_claims(ctx.read("stability.csv"), ctx.read("stability_runs.csv"))
    t = t[(t["set"] == "key") & t.claim.str.contains(pattern) & ((t.kind == kind) if kind else True)]
    if t.empty:
        raise Missing("stability.csv has no such comparison")
    r = t.iloc[0]
    return r.here, (None if pd.isna(r.holds) else bool(r.holds))


CONTROLLED = ("key-heads-exist", "key-heads-exist-share", "few-heads", "middle-layers", "logit-diff-ranking",
              "knockout-key-vs-random", "knockout-random-flat", "mlps-late", "transfer", "attention-roles", "stages")
"""The identify claims made inconclusive where the primary task fails its control (:func:`_controlled`)."""


DECIDERS: dict[str, Callable[[Context], tuple[str, bool | None]]] = {
    **{k: _controlled(f) for k, f in zip(CONTROLLED, (
        _key_heads, _key_heads_share, _few_heads, _middle_layers, _logit_diff_ranking, _knockout_key_vs_random,
        _knockout_random_flat, _mlps_late, _transfer, attention_roles, stages))},
    "circuit-faithful": _controlled(circuit_faithful),
    "precise-matches-full": precise_matches_full, "precise-keeps-generic": precise_keeps_generic,
    "selection-matters": selection_matters,
    "key-heads-stable": lambda ctx: _stability(ctx, "independent draws", "operator"),
    "counterfactuals-agree": lambda ctx: _stability(ctx, "Operator and operand", None), "answer-token-floor": _answer_token_floor, "ablation-removes-information": _ablation_removes,
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
    df["holds"] = pd.Series([r[-1] for r in rows], dtype=object)      # True / False / None, never numpy bools
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
    note = lambda r: (f"; inconclusive where the task fails its control (floor over distinct problems on its X_r "
                      f"could be >= {CONTROL_FLOOR:.0%}: the 95% interval of some reading over its effective problems "
                      f"reaches it) or has fewer than {MIN_PROBLEMS} distinct problems"
                      if r.id in CONTROLLED + ("circuit-faithful",) else "")
    return "\n".join(f"* **{r.claim}** (paper: {r.paper}) — {r.rule}{note(r)} (`{r.id}`, version {r.version})."
                     for r in select(ids))



# ------------------------------------------------------------------ faithfulness (issue #26, item 4)
# Decided by arithmech.methods.faithfulness_rule.faithful_verdict (version 7, issue #41 item 4: bounded and unclipped,
# both directions, across positions, adjusted over the candidates); see its changelog entries for what existed then.
RULES += (
    Rule("circuit-faithful", "A small circuit keeps the answer when every other component is ablated and brings "
         "it back when patched into the counterfactual (beyond the paper)",
         "not measured in the paper (it knocks out heads; it does not run the circuit alone)",
         "a per-prompt recovery on evaluation-side prompts, (LD(run) − LD(baseline)) / (LD(X_r) − LD(baseline)), "
         "LD = logit(answer) − logit(X_c's answer), prompts whose own effect is not positive left out and counted; "
         "its mean over the used prompts clipped to [0, 1] and unclipped, each with a cluster-bootstrap interval at "
         "1 − 0.05/11 (Bonferroni over the 11 candidates), in both directions: noising (X_r, every other component "
         "ablated with reference-pool means; baseline: all ablated) and denoising (X_c with the circuit patched in "
         "from X_r; baseline: X_c). Candidates: the top-n components by effect rank at END for n ≤ 10, against ≥ 20 "
         "random circuits of n components outside the top n at END; and the cross-position circuit (the ≤ 5 heads "
         "attending most to the operands, above every head's 95th percentile, at the A, B, operator and END "
         "positions, plus the ≤ 5 first key heads at END; its noising ablates every other head at those positions, "
         "MLPs recomputed: its full effect is, as at END, the effect of the tokens before END, all of which reaches "
         "END through END's heads), against ≥ 20 random circuits of heads of the same layers at the same positions. "
         "A candidate decides only if in both directions at least half of its prompts are used, they ask at "
         "least 20 problem clusters and it has at least 20 random circuits. A deciding candidate is faithful iff in both directions its clipped interval "
         "lies at or above 80% and above the largest of its random circuits, and its unclipped interval lies "
         "at or below 120% (clipping alone cannot make it faithful); it fails iff in some direction its clipped "
         "interval lies entirely below 80% or reaches no higher than its random circuits' 95th percentile, or its "
         "unclipped interval lies entirely above 120% (it over-recovers). Holds iff some candidate is faithful; "
         "does not hold iff every candidate, each of them measured, fails; inconclusive otherwise, or where "
         "faithfulness.csv is missing or lacks the unclipped recovery or intervals at the rule's level",
         version=10),
)
BY_ID = {r.id: r for r in RULES}
