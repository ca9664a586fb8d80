"""The account rules, written before any run that decides them: one rule per account, as data and code.

Each account (H, B, F, D) is a list of :class:`Criterion`: its text, its threshold, whether it decides the
verdict or only describes, and when it is **not testable** here. :func:`decide` turns the numbers a run measured
(``signatures.json``'s ``numbers``, keys fixed below) into one verdict per criterion and per account. The rules'
text and thresholds are hashed (:func:`rules_sha256`); every results set records the hash it was decided under,
and a test checks that the rules' commit precedes the results' (rules first).

**Three-way verdicts from intervals.** A criterion *passes* when its whole 95% interval lies on the pass side of
its threshold, *fails* when the whole interval lies on the other side, and is *inconclusive* when the interval
straddles it; *not testable* when its precondition (written with it) does not hold on this testbed. An account
passes when every deciding criterion passes, fails when one fails, and is otherwise not testable (a deciding
criterion not testable) or inconclusive. The table scores signatures: two accounts can both pass.

Correction to the design notes (``accounts.md`` §2.1 wrote H's counterfactual test the other way round): under
Stolfo's result-preserving counterfactual (operands change, the result stays), a component that *writes the
result* has nothing to change, while one that *carries operands* still mixes them; so "MLPs compute" predicts a
small ratio for the MLPs and "heads route" a large one for the heads.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from arithmech.data.answers import MIN_CLUSTERS

PASS, FAIL, INCONCLUSIVE, NOT_TESTABLE = "pass", "fail", "inconclusive", "not testable"

# Thresholds (each used by one criterion below; changing one changes the rules' hash).
MLP_RATIO_MAX = 0.25  # H2: MLPs' effect with the result kept, as a share of their effect with it changed
HEAD_RATIO_MIN = 0.5  # H3: heads keep at least half their operand effect when the result is kept
FAITHFUL_F = 0.9  # B1: faithfulness the kept neurons must reach
FAITHFUL_WIDTH = 0.05  # B1: ... with at most this share of each flagged MLP's neurons
R2_MIN = 0.3  # B2: held-out R^2 of a neuron's best pattern for it to count as classified
CLASS_RATE_MIN = 0.5  # B2: share of the top neurons classified
NULL_FACTOR = 2.0  # B2: ... at least this many times the rate on permuted grids
EFFECT_FLOOR = 0.1  # B1, F3, D2: an ablation must move the last-digit logit difference by 10% of its clean value
PROBE_ALPHA = 0.05  # F1: family-wise level over the testable probes (Bonferroni) and the layers (max statistic)
SUBSPACE_DIM = 9  # D2: dimensions of the shared subspace
SUBSPACE_RECOVERY = 0.8  # D2: share of the top neurons' ablation effect it must carry
HELIX_PARAMS = 9  # D1: intercept, a, cos/sin of a for periods 2, 5, 10, 100 (sin of period 2 is zero on integers)
HELIX_VALUES_PER_PARAM = 3  # D1: distinct operand values per parameter to identify a fit
HELIX_CHANCE = 0.1  # D1: the answered share's Wilson lower bound must exceed chance for a last digit
# The full hashes of earlier versions of these rules (changelog.toml's accounts entries): a results set decided under
# one stands while the current rules, applied to its numbers, give its verdicts (tests/unit/accounts/test_rules.py).
EARLIER_SHA256 = (
    "f1d4360d38a1b5bbaf38d5dd78fb1e9df3109e0a9935dab47070be019e9b6420",  # v1
    "ac0d5fde5a4ca814a6020a6cb580f322fe3c782313723c317c3fa2a6be44f331",  # v2
)


@dataclass(frozen=True)
class Criterion:
    """One testable signature of an account: ``id`` (``"B2"``), ``text`` (what must hold), ``decides`` (part of
    the account's verdict, else descriptive), ``not_testable`` (when this testbed cannot decide it)."""

    id: str
    text: str
    decides: bool = True
    not_testable: str = ""


@dataclass(frozen=True)
class AccountRule:
    """An account: its letter, name, sources, the criteria, and what passing means."""

    account: str
    name: str
    sources: str
    criteria: tuple[Criterion, ...]
    meaning: str


RULES: tuple[AccountRule, ...] = (
    AccountRule(
        "H",
        "heads move operands, MLPs compute",
        "Zhang et al. 2024 (ICML); Stolfo et al. 2023 (EMNLP), result-preserving counterfactual",
        (
            Criterion("H1", "identify's key-head rule finds at least one key head on the model's pooled task"),
            Criterion(
                "H2",
                f"the flagged MLPs' summed patching effect on the answer logit under the result-preserving "
                f"counterfactual is at most {MLP_RATIO_MAX} of their effect under the operand counterfactual "
                "(95% cluster-bootstrap interval of the ratio, clusters: operand pairs): they write the result",
                not_testable=f"the MLPs' operand-counterfactual effect interval includes 0, or fewer than "
                f"{MIN_CLUSTERS} operand pairs",
            ),
            Criterion(
                "H3",
                f"the studied heads' ratio (same measure) is at least {HEAD_RATIO_MIN}: they carry operands",
                not_testable=f"the heads' operand-counterfactual effect interval includes 0, or fewer than "
                f"{MIN_CLUSTERS} operand pairs",
            ),
        ),
        "a few heads route operands to the last position and the MLPs compute the result there",
    ),
    AccountRule(
        "B",
        "a bag of heuristic neurons",
        "Nikankin et al. 2025 (ICLR)",
        (
            Criterion(
                "B1",
                f"keeping the top-k neurons (attribution) of each flagged MLP and mean-ablating the rest reaches "
                f"faithfulness F >= {FAITHFUL_F} with k at most {FAITHFUL_WIDTH:.0%} of the MLP's width",
                not_testable=f"ablating every neuron of the flagged MLPs moves the last-digit logit difference by "
                f"less than {EFFECT_FLOOR:.0%} of its clean value",
            ),
            Criterion(
                "B2",
                f"at least {CLASS_RATE_MIN:.0%} of the top neurons are classified (best heuristic pattern, "
                f"held-out grid cells, R^2 >= {R2_MIN}; Wilson interval) and the rate is at least "
                f"{NULL_FACTOR:g}x the rate on operand-permuted grids",
            ),
            Criterion(
                "B3",
                "mean-ablating each prompt's associated heuristic neurons lowers its last-digit logit difference "
                "more than ablating as many unassociated top neurons of the same layers (95% cluster-bootstrap "
                "interval of the paired difference above 0)",
                not_testable=f"fewer than {MIN_CLUSTERS} operand pairs have an associated neuron",
            ),
            Criterion(
                "B/F",
                "descriptive: the share of classified neurons whose periodic fit (periods 2, 5, 10; as many "
                "parameters) beats the heuristic indicators on held-out cells; above 0.5 (whole interval) the "
                "heuristics are Fourier features (Feucht's hybrid), below 0.5 they are not periodic",
                decides=False,
            ),
        ),
        "the MLPs' answer is the sum of many neurons, each firing on an operand or result pattern",
    ),
    AccountRule(
        "F",
        "Fourier features",
        "Zhou et al. 2024 (NeurIPS); control of Fu et al. 2026",
        (
            Criterion(
                "F1",
                "a linear probe of x mod T (x: operand a at its token, a+b at the last position; T in 2, 5, 10) "
                "trained on some values of x predicts the residue of held-out values with Cohen's kappa above "
                f"the 1 - {PROBE_ALPHA}/m quantile of a residue-permutation null (m testable probes; the maximum "
                "over layers in both)",
                not_testable="no held-out value of x shares its residue with a training value (a mod 10 with "
                "operands 1-9: every residue occurs once)",
            ),
            Criterion(
                "F2",
                "descriptive: the share of power at periods 10, 5, 2 in the digit logits the MLPs and the heads "
                "write at the last position, beside the same share in the digit-token frequency baseline and "
                "in an isotropic vector (5/9); a spectrum alone proves nothing (Fu et al.)",
                decides=False,
            ),
            Criterion(
                "F3",
                "removing the period-10, 5 and 2 components (5 directions) of every MLP's last-position output "
                "within the digit-logit subspace lowers the last-digit logit difference more than removing 5 "
                "random directions of that subspace: above the 95th percentile of the random draws and the paired "
                "difference's cluster interval above 0",
                not_testable=f"removing the whole digit-logit subspace of the MLP outputs moves the logit "
                f"difference by less than {EFFECT_FLOOR:.0%} of its clean value",
            ),
            Criterion(
                "F3-attn",
                "descriptive: the same removal on the attention outputs",
                decides=False,
            ),
        ),
        "numbers are represented and combined through periodic (mod 2, 5, 10) features",
    ),
    AccountRule(
        "D",
        "a helix (the 'Clock')",
        "Kantamneni & Tegmark 2025; digit-level: Levy & Geva 2025",
        (
            Criterion(
                "D1",
                "a helix fit of the operand's representation (the residual stream at its last token, its ones digit "
                "under a digit tokenizer, over the two-digit grid of one template: a, cos and sin of a for periods "
                "2, 5, 10, 100, fitted after PCA to 100 dimensions), patched into runs with another operand a' (the "
                "same carried digits, another last digit), raises the clean answer digit's logit difference at "
                "least as much as the cell's own representation projected on as many principal components, and "
                "more than a helix fitted on shuffled a and a polynomial in a of as many parameters, and at least as "
                "much as the digit lookup: the mean representation of the cells with the same ones digit of a (the "
                "score reads the answer's last digit, so a period-10 pattern, which comes with a ones-digit token, "
                "is all it sees unless the helix's a and period-100 terms add to it) (per prompt, "
                "helix minus each control averaged over the studied layers where patching the whole representation "
                f"moves the logit difference by at least {EFFECT_FLOOR:.0%} of its clean value; each 95% cluster "
                "interval at or above 0, clusters: operand pairs)",
                not_testable=f"fewer than {HELIX_VALUES_PER_PARAM * HELIX_PARAMS} distinct operand values "
                f"({HELIX_VALUES_PER_PARAM} per parameter of the {HELIX_PARAMS}-parameter helix: the one-digit "
                f"grid), the Wilson lower bound of the share of two-digit cells answered (the answer digit the "
                f"model's top token) at or below {HELIX_CHANCE} (chance for a last digit), fewer than "
                f"{MIN_CLUSTERS} answered cells with a counterfactual, or no studied layer where the whole "
                "representation's patch moves the logit difference that much",
            ),
            Criterion(
                "D2",
                f"a subspace of at most {SUBSPACE_DIM} dimensions of the top neurons' joint write (principal "
                f"components over the grid, per flagged layer) carries at least {SUBSPACE_RECOVERY} of their "
                "ablation effect (cluster interval of the ratio): a shared low-dimensional variable",
                decides=False,
                not_testable=f"the top neurons' ablation effect interval includes 0, or it is below "
                f"{EFFECT_FLOOR:.0%} of the clean logit difference",
            ),
            Criterion(
                "D3",
                "rotating the period-10 plane of a by 2*pi*delta/10 moves the last digit by delta, above rotations "
                "in variance-matched planes",
                not_testable="needs the helix of D1",
            ),
        ),
        "an operand is a point on a helix and addition rotates it",
    ),
)
BY_ACCOUNT = {r.account: r for r in RULES}


def rules_record() -> dict:
    """The rules as JSON: every account, criterion, text and threshold (what :func:`rules_sha256` hashes)."""
    thresholds = {k: v for k, v in globals().items() if k.isupper() and isinstance(v, (int, float))}
    return {"accounts": [asdict(r) for r in RULES], "thresholds": dict(sorted(thresholds.items()))}


def rules_version(sha: str | None) -> int | None:
    """The version of these rules whose hash is ``sha`` (1, 2, ... as in the changelog), None for an unknown hash."""
    known = (*EARLIER_SHA256, rules_sha256())
    return known.index(sha) + 1 if sha in known else None


def rules_sha256() -> str:
    """The sha256 of :func:`rules_record`'s canonical JSON: results record it; a changed rule changes it."""
    return hashlib.sha256(json.dumps(rules_record(), sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------------------------------- deciding
def side(interval, threshold: float, above: bool) -> str:
    """PASS when the whole ``(mean, lo, hi)`` interval lies above ``threshold`` (``above``; below otherwise, ties
    pass), FAIL when it lies wholly on the other side, else INCONCLUSIVE."""
    _, lo, hi = interval
    if above:
        return PASS if lo >= threshold else FAIL if hi < threshold else INCONCLUSIVE
    return PASS if hi <= threshold else FAIL if lo > threshold else INCONCLUSIVE


def _ratio(n: dict, group: str, threshold: float, above: bool) -> str:
    den = n[f"den_{group}"]
    if n["clusters_cf"] < MIN_CLUSTERS or den[2] >= 0:  # the operand effect must be a drop, interval below 0
        return NOT_TESTABLE
    return side(n[f"rho_{group}"], threshold, above)


def _h(n: dict) -> dict:
    return {
        "H1": PASS if n["key_heads"] >= 1 else FAIL,
        "H2": _ratio(n, "mlp", MLP_RATIO_MAX, above=False),
        "H3": _ratio(n, "heads", HEAD_RATIO_MIN, above=True),
    }


def _b(n: dict) -> dict:
    out = {}
    if abs(n["f_denominator"]) < EFFECT_FLOOR * abs(n["ld_clean"]):
        out["B1"] = NOT_TESTABLE
    else:
        k = n["b1_k"]
        out["B1"] = PASS if k is not None and k <= FAITHFUL_WIDTH * n["width"] else FAIL
    rate, lo, hi = n["class_rate"]
    enough = rate >= NULL_FACTOR * n["null_rate"]
    out["B2"] = PASS if lo >= CLASS_RATE_MIN and enough else FAIL if hi < CLASS_RATE_MIN or not enough else INCONCLUSIVE
    out["B3"] = NOT_TESTABLE if n["assoc_clusters"] < MIN_CLUSTERS else side(n["assoc_diff"], 0.0, above=True)
    bf = n.get("periodic_wins")
    out["B/F"] = NOT_TESTABLE if bf is None else side(bf, 0.5, above=True)
    return out


def _f(n: dict) -> dict:
    probes = [p for p in n["probes"] if p["testable"]]
    if not probes:
        f1 = NOT_TESTABLE
    else:
        f1 = PASS if any(p["kappa"] > p["null_quantile"] for p in probes) else FAIL
    out = {"F1": f1, "F2": PASS if n["spectrum_mlp"] > n["spectrum_baseline"] else FAIL}
    for key, site in (("F3", "mlp"), ("F3-attn", "attn")):
        r = n[f"removal_{site}"]
        if abs(r["full_drop"]) < EFFECT_FLOOR * abs(n["ld_clean"]) or n["clusters_removal"] < MIN_CLUSTERS:
            out[key] = NOT_TESTABLE
        elif r["periodic_drop"] > r["random_q95"] and r["diff"][1] > 0:
            out[key] = PASS
        else:
            out[key] = FAIL if r["diff"][2] <= 0 or r["periodic_drop"] <= r["random_median"] else INCONCLUSIVE
    return out


def helix_testable(h: dict | None) -> str:
    """Why D1 is not testable on the two-digit grid's numbers ``h`` (``numbers["helix"]``), or "" where it is."""
    if h is None or h["values"] < HELIX_VALUES_PER_PARAM * HELIX_PARAMS:
        return "one-digit grid" if h is None else f"{h['values']} operand values"
    share = h["share"]
    if share[1] <= HELIX_CHANCE:
        return (
            f"{h['answered']} of {h['cells']} two-digit cells answered ({share[0]:.1%}, Wilson lower bound "
            f"{share[1]:.1%}): needs the lower bound above {HELIX_CHANCE:.0%}"
        )
    if h["patch_prompts"] < MIN_CLUSTERS:
        return f"{h['patch_prompts']} answered cells with a counterfactual, fewer than {MIN_CLUSTERS}"
    if not h.get("live_layers"):
        return f"no studied layer's full patch moves the logit difference by {EFFECT_FLOOR:.0%} of its clean value"
    return ""


def _d1(h: dict | None) -> str:
    if h is None or helix_testable(h):
        return NOT_TESTABLE
    v = [side(h[f"vs_{k}"], 0.0, above=True) for k in ("pca", "shuffled", "poly", "digit")]
    return FAIL if FAIL in v else PASS if all(x == PASS for x in v) else INCONCLUSIVE


def _d(n: dict) -> dict:
    d1 = _d1(n.get("helix"))
    sub = n.get("subspace")
    if sub is None or sub["all"][2] >= 0 or abs(sub["all"][0]) < EFFECT_FLOOR * abs(n["ld_clean"]):
        d2 = NOT_TESTABLE
    else:
        d2 = side(sub["ratio"], SUBSPACE_RECOVERY, above=True)
    return {"D1": d1, "D2": d2, "D3": NOT_TESTABLE}


DECIDERS = {"H": _h, "B": _b, "F": _f, "D": _d}


def account_verdict(rule: AccountRule, by_criterion: dict) -> str:
    """An account's verdict from its deciding criteria (module docstring)."""
    v = [by_criterion[c.id] for c in rule.criteria if c.decides]
    if FAIL in v:
        return FAIL
    if all(x == PASS for x in v):
        return PASS
    return NOT_TESTABLE if NOT_TESTABLE in v else INCONCLUSIVE


def decide(numbers: dict) -> dict:
    """Every account's verdict and its criteria's, from a run's ``numbers``: ``{account: {"verdict", "criteria"}}``."""
    out = {}
    for rule in RULES:
        crit = DECIDERS[rule.account](numbers)
        out[rule.account] = {"verdict": account_verdict(rule, crit), "criteria": crit}
    return out
