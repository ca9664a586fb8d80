"""The Planted chapter's page: every sentence, table and chart of ``book/planted.md``, one call per cell.

:func:`run` reads the planted-score step's files (:mod:`arithmech.planted.run`), shipped in
``results/planted/planted_score/``, or makes them where they are missing, were made with other parameters or under
other rules; every other function takes that :class:`~arithmech.planted.run.Result` and returns what its
cell shows, computed from the files (no number is typed into the page)::

    >>> r = run(P)
    >>> answer(r); truth(); table(r); knockout(r); failures(r)
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from arithmech.core.names import component, components
from arithmech.core.results import model_folder
from arithmech.data import planted_items
from arithmech.embedded import planted as planted_model
from arithmech.planted import rules as planted_rules
from arithmech.planted import run as step
from arithmech.planted.config import Chapter
from arithmech.planted.table1_rules import MAX_EXTEND

NAMES = {
    "identify-paper": "identify's key heads (paper's rule)",
    "identify-share": "identify's key heads (share rule)",
    "eap": "EAP",
    "eap-ig": "EAP-IG",
    "knockout-heads": "the one-head knockout",
}


TABLE1_COMMAND = (
    f"python -m arithmech table1 --model planted --suite planted --top-k 3 --curve-steps 1280 --max-extend {MAX_EXTEND}"
)
"""What makes the planted model's Table 1 (``results/planted/finetune/``): the Fine-tune chapter's arms and rules on the
``planted`` suite (:mod:`arithmech.evals.suites`), precise SFT of identify's three key heads."""


def table1_folder(chapter: Chapter) -> Path:
    """``<results>/planted/``: where identify's ranking and the Table 1 records of :data:`TABLE1_COMMAND` live."""
    return model_folder(chapter.results, "planted")


def wanted(config, but: tuple[str, ...] = ()) -> dict:
    """``config``'s parameters as the scores record them (its reuse key through JSON), without the keys in ``but``."""
    return {k: v for k, v in json.loads(json.dumps(config.reuse_key(), default=str)).items() if k not in but}


def reusable(result: step.Result | None, want: dict, but: tuple[str, ...] = ()) -> bool:
    """Whether ``result`` was made under the current rules with the parameters ``want`` (:func:`wanted`; the keys
    in ``but`` left out of both)."""
    if result is None or result.scores.get("rules_sha256") != planted_rules.rules_sha256():
        return False
    params = result.scores.get("parameters")
    return isinstance(params, dict) and {k: v for k, v in params.items() if k not in but} == want


def run(chapter: Chapter) -> step.Result:
    """The scores: read from their files when made with the chapter's parameters under the current rules, else
    computed (the planted model is small: about a minute on 2 cores) and read back."""
    config = chapter.to_score().replace(overwrite=True)
    got = None if chapter.recompute else step.Result.stored(config)
    return got if got is not None and reusable(got, wanted(config)) else step.run(config)


SEED_MODELS = {1: "planted-seed1", 2: "planted-seed2"}
"""The planted model's other training seeds: ``python -m arithmech train-planted --seed N --out planted-seedN`` (the
weights are byte-identical for one seed and thread count, so they are not shipped), scored by ``python -m arithmech
planted-score --model planted-seedN`` into ``results/planted-seedN/planted_score/``."""


def seed_results(chapter: Chapter, r: step.Result) -> dict[int, step.Result | None]:
    """Seed → its scores (seed 0: ``r``, the shipped model's); another seed's read from its files where scored with the
    chapter's step parameters under the current rules, else None (never trained here: it takes minutes a seed)."""
    config = chapter.to_score()
    want = wanted(config, but=("model_name",))  # the other seeds' parameters: the chapter's, but for the model
    out: dict[int, step.Result | None] = {0: r}
    for seed, name in SEED_MODELS.items():
        got = step.Result.stored(config, name)
        out[seed] = got if reusable(got, want, but=("model_name",)) else None
    return out


def seeds(by_seed: dict[int, step.Result | None]) -> pd.DataFrame:
    """Methods x training seeds: each seed's verdict with recall and precision [95% cluster interval], and the verdict
    across seeds (:data:`arithmech.planted.rules.SEEDS_RULE`, from the seeds scored)."""
    rows = []
    for crit in planted_rules.RECOVERY:
        row = {"method": NAMES[crit.id]}
        verdicts = []
        for seed, res in by_seed.items():
            if res is None:
                row[f"seed {seed}"] = "not scored"
                continue
            m = res.scores["numbers"]["methods"][crit.id]
            v = res.scores["verdicts"][crit.id]
            verdicts.append(v)
            row[f"seed {seed}"] = (
                f"{v}: recall {_interval(m['recall']['value'], m['recall']['lo'], m['recall']['hi'])}, precision "
                f"{_interval(m['precision']['value'], m['precision']['lo'], m['precision']['hi'])}"
            )
        row["across seeds"] = planted_rules.across_seeds(verdicts)
        rows.append(row)
    return pd.DataFrame(rows)


def seeds_line(table: pd.DataFrame) -> str:
    """One sentence from :func:`seeds`' table: each verdict across the training seeds scored, with its methods."""
    scored = [c for c in table.columns if c.startswith("seed ") and (table[c] != "not scored").any()]
    groups: dict[str, list[str]] = {}
    for method, v in zip(table["method"], table["across seeds"]):
        groups.setdefault(v, []).append(method)
    parts = "; ".join(f"{', '.join(ms)}: **{v}**" for v, ms in groups.items())
    return f"**Across the {len(scored)} training seeds scored** ({', '.join(scored)}; the rule across seeds): {parts}."


def _interval(v, lo, hi, digits: int = 2) -> str:
    if v is None or pd.isna(v):
        return "none (no head named)"
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _pct(v, lo, hi) -> str:
    return f"{v:.1%} [{lo:.1%}, {hi:.1%}]"


def answer(r: step.Result) -> list[str]:
    """The page's opening lines, from the files: per method, how many of the planted movers it found, how many heads it
    named, recall and precision with their intervals and the rule's verdict; then the knockout against its control."""
    s = r.scores["numbers"]
    lines = [headline(r)]
    for crit in planted_rules.RECOVERY:
        m = s["methods"][crit.id]
        rec, prec = m["recall"], m["precision"]
        named = len(m["found"])
        lines.append(
            f"**{NAMES[crit.id]}** found **{rec['k']} of {rec['n']}** planted movers, naming {named} head"
            f"{'' if named == 1 else 's'} (recall {_interval(rec['value'], rec['lo'], rec['hi'])}, precision "
            f"{_interval(prec['value'], prec['lo'], prec['hi'])}; {m['clusters']} problem clusters): "
            f"*{r.scores['verdicts'][crit.id]}*."
        )
    ko = r.knockout.set_index("condition")
    base, movers = ko.iloc[0], ko.loc["planted movers"]
    rand = ko[ko.index.str.startswith("random")].iloc[0]
    floor = ko.loc["guessing floor"]
    lines.append(
        f"**The knockout**: mean-ablating the movers takes first-answer-token accuracy from "
        f"{_pct(base.accuracy, base.lo, base.hi)} to {_pct(movers.accuracy, movers.lo, movers.hi)} (guessing floor "
        f"{_pct(floor.accuracy, floor.lo, floor.hi)}); as many random non-planted heads take it to "
        f"{_pct(rand.accuracy, rand.lo, rand.hi)} (n={int(base.n)} prompts, {int(base.clusters)} problem clusters): "
        f"*{r.scores['verdicts']['knockout-planted']}* / *{r.scores['verdicts']['knockout-random']}*."
    )
    return lines


def headline(r: step.Result) -> str:
    """One sentence: how many methods recover the movers under the rules written before the run, and which do not."""
    v = r.scores["verdicts"]
    ok = [c for c in planted_rules.RECOVERY if v[c.id] == planted_rules.PASS]
    rest = ", ".join(f"{NAMES[c.id]} ({v[c.id]})" for c in planted_rules.RECOVERY if v[c.id] != planted_rules.PASS)
    n = r.scores["numbers"]["methods"][planted_rules.RECOVERY[0].id]["recall"]["n"]
    return (
        f"**{len(ok)} of the {len(planted_rules.RECOVERY)} methods recover the {n} planted movers** under the rules "
        "written before "
        f"the run" + (f"; not recovered: {rest}." if rest else ".")
    )


def identify_note(r: step.Result) -> str:
    """What identify ran on: the prompts it kept per operation, the operations its control pooled, and why it left the
    others out (from the files)."""
    i = r.scores["identify"]
    kept = ", ".join(f"{t} {k}" for t, k in i["kept"].items())
    left = "; ".join(f"{t}: {why}" for t, why in i["failed_control"].items()) or "none"
    return (
        f"Identify kept X_r ({kept}) under the answer token `{i['answer_token']}` and pooled "
        f"**{', '.join(i['tasks_pooled'])}**, the operations that pass its control; left out: {left}."
    )


def per_task(r: step.Result) -> pd.DataFrame:
    """Identify's paper rule on each operation's own prompts, scored the same way (descriptive: an operation its control
    leaves out is no evidence for the paper's claim, but the planted heads are still the truth there)."""
    i = r.scores["identify"]
    rows = []
    for t, m in i["per_task"].items():
        rows.append(
            {
                "operation": t,
                "pooled": t in i["tasks_pooled"],
                "heads found": components(m["found"]),
                "recall [95% CI]": _interval(m["recall"]["value"], m["recall"]["lo"], m["recall"]["hi"]),
                "precision [95% CI]": _interval(m["precision"]["value"], m["precision"]["lo"], m["precision"]["hi"]),
                "prompts": m["n"],
                "problem clusters": m["clusters"],
            }
        )
    return pd.DataFrame(rows)


def truth() -> pd.DataFrame:
    """The ground truth: every head's role fixed in the weights, and whether a last-position method should find it."""
    cfg = planted_model.SIZE
    rows = []
    what = {
        "mover": "reads operand and operator tokens from the last position: the only route to the answer",
        "composer": "free only from operand and operator positions; at the last one it reads <s> only (a constant)",
        "blind": "cannot attend to an operand or operator token",
        "off": "attends to <s> only: a constant output",
    }
    for l in range(cfg["n_layers"]):
        for h in range(cfg["n_heads"]):
            role = planted_model.role(l, h)
            rows.append(
                {
                    "head": component(l, h),
                    "role": role,
                    "should be found": role == "mover",
                    "by construction": what[role],
                }
            )
    return pd.DataFrame(rows)


def table(r: step.Result) -> pd.DataFrame:
    """Precision and recall of every method with their 95% cluster intervals, n and the verdict."""
    rows = []
    for m in r.methods.itertuples():
        rows.append(
            {
                "method": NAMES[m.method],
                "heads found": components(m.found.split(", ")) if m.found else "none",
                "recall [95% CI]": _interval(m.recall, m.recall_lo, m.recall_hi),
                "precision [95% CI]": _interval(m.precision, m.precision_lo, m.precision_hi),
                "prompts": int(m.n),
                "problem clusters": int(m.clusters),
                "verdict": m.verdict,
            }
        )
    return pd.DataFrame(rows)


def knockout(r: step.Result) -> pd.DataFrame:
    """The knockout with its controls: accuracy and the paired drop from the unablated model, 95% cluster intervals."""
    out = []
    for k in r.knockout.itertuples():
        out.append(
            {
                "condition": k.condition,
                "heads ablated": components(k.ablated.split(", "))
                if k.ablated and k.ablated[0].isdigit()
                else k.ablated or "-",
                "accuracy [95% CI]": _pct(k.accuracy, k.lo, k.hi),
                "drop [95% CI]": "-" if pd.isna(k.drop) else _pct(k.drop, k.drop_lo, k.drop_hi),
                "n": int(k.n),
                "problem clusters": int(k.clusters),
            }
        )
    return pd.DataFrame(out)


def heads(r: step.Result) -> pd.DataFrame:
    """Methods x heads: the share of cluster resamples in which the method found the head (planted heads marked)."""
    h = r.heads.copy()
    h["name"] = [f"{l}.{k}{'*' if role == 'mover' else ''}" for l, k, role in zip(h["layer"], h["head"], h["role"])]
    wide = h.pivot_table(index="method", columns="name", values="found_share", sort=False).reset_index()
    wide["method"] = wide["method"].map(NAMES)
    return wide


def _movers(r: step.Result, method: str) -> str:
    """Each mover's statistic under ``method``'s rule, ``"2.0 -0.239 [-0.334, -0.157], ..."`` (from ``heads.csv``)."""
    st = r.heads[(r.heads["method"] == method) & (r.heads["role"] == "mover")]
    cols = st[["layer", "head", "statistic", "lo", "hi"]].itertuples(index=False)
    return ", ".join(f"{component(l, h)} {x:+.3f} [{lo:+.3f}, {hi:+.3f}]" for l, h, x, lo, hi in cols)


def failures(r: step.Result) -> list[str]:
    """Plain lines for every criterion that did not pass, with the numbers that show why (from the files); for an
    attribution method, beside identify's exact path-patching effect it estimates."""
    out = []
    for crit in planted_rules.CRITERIA:
        v = r.scores["verdicts"][crit.id]
        if v == planted_rules.PASS:
            continue
        m = r.scores["numbers"]["methods"].get(crit.id)
        if m is None:
            out.append(f"**{crit.id}** ({v}): {crit.text}.")
            continue
        line = (
            f"**{NAMES[crit.id]}** ({v}) found {m['recall']['k']} of {m['recall']['n']} movers and named "
            f"{len(m['found'])} head(s); the statistic its rule reads, per mover (mean [95% interval]): "
            f"{_movers(r, crit.id)}"
        )
        if crit.id in ("eap", "eap-ig"):
            line += f"; the exact path-patching effect it estimates (identify's): {_movers(r, 'identify-paper')}"
        out.append(line + ".")
    return out or ["Every criterion passed."]


def rules_text() -> str:
    """The rules as Markdown, with the hash the results were decided under."""
    lines = [f"- **{c.id}** — {c.method}: {c.text}." for c in planted_rules.CRITERIA]
    return "\n".join(
        lines
        + [
            "",
            f"Not testable below {planted_rules.MIN_CLUSTERS} problem clusters. Rules hash "
            f"`{planted_rules.rules_sha256()[:16]}`.",
        ]
    )


def command(r: step.Result) -> str:
    """The command that made the files, and the rules' hash they record."""
    return f"{r.scores['command']}\n(rules sha256 {r.scores['rules_sha256'][:16]}…)"


def chance() -> str:
    """Each side's chance level, computed from the items (:func:`arithmech.data.planted_items.side_chance`)."""
    per = {side: planted_items.side_chance(side, planted_items.skill_items(side)) for side in ("val", "test")}
    return f"chance (per-operation majority share): validation {per['val']:.1%}, test {per['test']:.1%}"
