"""The claims as the introduction and the rules page show them: verdicts read, never typed.

* :func:`results_box` — the introduction's box per model: the paper's claims, this run's numbers and
  a verdict (*holds* / *does not hold* / *inconclusive*), all read from
  :func:`arithmech.claims.decide.claims` on ``results/<model>/``, with the answer sentence
  (:func:`answer_sentence`) and the tally (:func:`tally`); the controls of the method apart (:func:`is_control`),
  the claims this book adds counted apart (:func:`is_added`).
  :func:`arithmech.report.build.generate.write_generated` writes it to ``book/_generated/findings.md``, which the
  introduction includes.
* :func:`rules_page` — the rules page: every claim's rule and version beside its verdict per model, the rules'
  provenance (:func:`provenance_sentence`) and their changelog (:func:`changelog_table`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from arithmech.claims import changelog
from arithmech.claims.decide import ADDED, BY_ID, RULES, claims
from arithmech.claims.evidence import Context
from arithmech.core import results
from arithmech.report.views.fewshot import changed_lines
from arithmech.report.views.table_display import MISSING, VERDICT, claim_verdict, verdict
from arithmech.table1 import confirmation
from arithmech.table1.confirmation import Confirmation


def _md_cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _version(rule_id: str) -> str:
    return f"v{BY_ID[rule_id].version}" if rule_id in BY_ID else MISSING


def claims_table(claims: pd.DataFrame) -> str:
    """Markdown table ``claim | paper | rule (version) | this run | verdict`` of a claims frame (see
    :func:`arithmech.claims.decide.claims`); the version's history is in :func:`changelog_table`."""
    paper_col = next(c for c in claims.columns if c.startswith("paper"))
    rows = [
        "| claim | paper (LLaMA2-7B) | rule (its version) | this run | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for _, r in claims.iterrows():
        rows.append(
            f"| {_md_cell(r['claim'])} | {_md_cell(r[paper_col])} | {_md_cell(r['rule'])} ({_version(r['id'])}) | "
            f"{_md_cell(r['here'])} | **{claim_verdict(r['holds'], r['here'])}** |"
        )
    return fixed_table("\n".join(rows), "arithmech-rules")


def fixed_table(md: str, css_class: str) -> str:
    """A markdown table inside a ``{div}`` of ``css_class``, whose column widths ``book/_static/arithmech.css``
    fixes so that long prose cells wrap inside the text column instead of running past it."""
    return f":::{{div}} {css_class}\n{md}\n:::"


RULES_PAGE = "claims_rules.md"  # the page that lists every rule beside its verdict (book/claims_rules.md)


def is_control(claims: pd.DataFrame) -> pd.Series:
    """The rows that are controls of the method, not claims of the paper: their claim ends "(control)" or
    "(beyond the paper: a control)"."""
    return claims["claim"].str.contains(r"\bcontrol\)", regex=True)


def is_added(claims: pd.DataFrame) -> pd.Series:
    """The rows that are claims this book adds, not the paper's (:data:`arithmech.claims.decide.ADDED`): counted
    apart from the paper's claims (five of "the paper's 16" once were not the paper's)."""
    return claims["id"].isin(ADDED) if "id" in claims else pd.Series(False, index=claims.index)


def the_papers(claims: pd.DataFrame) -> pd.DataFrame:
    """The paper's own claims of a claims frame: neither controls nor the book's added claims."""
    return claims[~is_control(claims) & ~is_added(claims)]


def _verb(n: int, plural: str) -> str:
    """``plural`` ("hold", "do not", "are") agreeing with a count ``n``: "1 holds", "1 does not", "1 is"."""
    return {"hold": "holds", "do not": "does not", "are": "is"}[plural] if n == 1 else plural


NO_GROUND_TRUTH = ("embedded",)
"""Models whose verdicts check the machinery, not the paper: the embedded toy is trained on identify's own templates
and one-digit operands, and nobody knows which of its heads should matter, so what patching finds, removed, only
checks consistency. Their boxes say so and are not counted as evidence for or against the paper."""


def answer_sentence(label: str, claims: pd.DataFrame, evidence: bool = True) -> str:
    """One sentence answering "does the paper's picture hold on this model?", computed from the verdicts of the
    paper's claims (controls apart): how many hold, which do not, how many are undecided (the table under it
    names every claim)."""
    paper = the_papers(claims)
    by = {
        v: [c.rstrip(".") for c, h in zip(paper["claim"], paper["holds"]) if verdict(h) == v] for v in VERDICT.values()
    }
    n = len(paper)
    lower = lambda xs: "; ".join(x if x[1:2].isupper() else x[0].lower() + x[1:] for x in xs)  # "MLPs" stays
    parts = [
        f"**{label}**: {len(by['holds'])} of the paper's {n} claims {_verb(len(by['holds']), 'hold')}",
        f"{len(by['does not hold'])} {_verb(len(by['does not hold']), 'do not')}"
        + (f" ({lower(by['does not hold'])})" if by["does not hold"] else ""),
        f"{len(by['inconclusive'])} {_verb(len(by['inconclusive']), 'are')} undecided (missing results, tests this "
        "model rules out, or intervals that do not decide)",
    ]
    picture = (
        "the paper's picture holds"
        if not by["does not hold"] and not by["inconclusive"]
        else "the paper's picture does not appear"
        if not by["holds"]
        else "the paper's picture holds only in part"
    )
    added = claims[is_added(claims) & ~is_control(claims)]
    extra = f" Of the {len(added)} claims this book adds, {tally(added, added=True)}." if len(added) else ""
    if not evidence:
        return (
            f"{parts[0]}; {parts[1]}; {parts[2]} — **checks of the machinery, not evidence**: a toy trained on "
            "identify's own templates, whose circuit nobody knows, tests that the pipeline runs and agrees with "
            f"itself, not the paper.{extra}"
        )
    return f"{parts[0]}; {parts[1]}; {parts[2]}: {picture}.{extra}"


def findings_table(claims: pd.DataFrame) -> str:
    """Markdown table ``claim | paper | this run | verdict`` (each claim links to its rule on the rules page)."""
    paper_col = next(c for c in claims.columns if c.startswith("paper"))
    rows = ["| claim | paper (LLaMA2-7B) | this run | verdict |", "| --- | --- | --- | --- |"]
    for _, r in claims.iterrows():
        rows.append(
            f"| [{_md_cell(r['claim'])}]({RULES_PAGE}) | {_md_cell(r[paper_col])} | {_md_cell(r['here'])} | "
            f"**{claim_verdict(r['holds'], r['here'])}** |"
        )
    return "\n".join(rows)


def tally(claims: pd.DataFrame, added: bool = False) -> str:
    """``"4 of 9 claims hold, 3 do not, 2 inconclusive"`` for the paper's claims of a claims frame (``added``: for
    the claims this book adds, :func:`is_added`): controls (:func:`is_control`) are never counted, whoever calls
    it (they have :func:`controls_table`)."""
    keep = ~is_control(claims) & (is_added(claims) if added else ~is_added(claims))
    v = [verdict(h) for h in claims.loc[keep, "holds"]]
    n = len(v)
    return (
        f"{v.count('holds')} of {n} {'claim' if n == 1 else 'claims'} {_verb(v.count('holds'), 'hold')}, "
        f"{v.count('does not hold')} {_verb(v.count('does not hold'), 'do not')}, "
        f"{v.count('inconclusive')} inconclusive"
    )


def controls_table(claims: pd.DataFrame) -> str:
    """Markdown table ``control | this run | verdict`` of the control rows of a claims frame (:func:`is_control`):
    the checks of the method, shown apart from the paper's claims and never in their :func:`tally`."""
    rows = ["| control (not a claim of the paper) | this run | verdict |", "| --- | --- | --- |"]
    for _, r in claims[is_control(claims)].iterrows():
        name = r["claim"].replace(" (beyond the paper: a control)", "").replace(" (control)", "")
        rows.append(
            f"| [{_md_cell(name)}]({RULES_PAGE}) | {_md_cell(r['here'])} | **{claim_verdict(r['holds'], r['here'])}** |"
        )
    return "\n".join(rows)


def provenance_sentence(rules=RULES) -> str:
    """One sentence, computed from :mod:`arithmech.claims.changelog`, on whether the rules were fixed before the
    results they decide: how many are unchanged since before those results existed (named), how many were
    written or changed after (named)."""
    pre = [r.id for r in rules if changelog.pre_registered(r.id)]
    post = [r.id for r in rules if not changelog.pre_registered(r.id)]
    ids = lambda xs: ", ".join(f"`{x}`" for x in xs) or "none"
    return (
        f"{len(pre)} of the {len(rules)} rules are unchanged since before the results they decide existed "
        f"({ids(pre)}); {len(post)} were written or changed after such results existed ({ids(post)}): see "
        f"the changelog on [the rules page]({RULES_PAGE}) for what changed, when, and on which results."
    )


def changelog_table() -> str:
    """Markdown table of :func:`arithmech.claims.changelog.read`'s entries (and the dropped rules): rule, version, date,
    commit, what changed, whether the results it decides existed then."""
    rows = [
        "| rule, version | date, commit | what changed | results it decides existed then |",
        "| --- | --- | --- | --- |",
    ]
    log = changelog.read()
    for c in (*log.changes, *log.dropped):
        kind = "" if c.rule in BY_ID else " (rule set)" if c.rule in log.rule_sets else " (dropped)"
        name = f"`{c.rule}` v{c.version}" + kind
        rows.append(f"| {name} | {c.date} `{c.commit}` | {_md_cell(c.what)} | {_md_cell(c.results)} |")
    return fixed_table("\n".join(rows), "arithmech-changelog")


def again_alone(pooled: Context) -> str:
    """Where the folder of ``pooled`` (its step Results) holds a run re-made on addition alone (``addition/``: the
    SmolLM2 appendix's *Addition alone*), the claims whose verdict it changes, so the introduction's sentence and the
    appendix's box do not give one claim two verdicts unexplained; else ""."""
    alone = pooled.folder / "addition"
    if not results.exists(alone, "key_heads.json"):
        return ""
    changed = changed_lines({"pooled": pooled, "addition alone": Context(alone)})
    return (
        " Decided again on a run of addition alone (its appendix's *Addition alone*): " + "; ".join(changed) + "."
        if changed
        else ""
    )


def results_box(ctx: Context, name: str, label: str, part: str = "all") -> str | None:
    """Markdown for model ``name`` (its results folder ``results/<name>/`` read as ``ctx``): the answer sentence
    (:func:`answer_sentence`) and an admonition with the findings; ``None`` where identify wrote no results there
    (the book then shows a note). ``part``: ``"sentence"`` or ``"box"`` for one of the two only (the introduction
    puts every model's sentence first, then Fig. 1, then the boxes)."""
    if part not in ("all", "sentence", "box"):
        raise ValueError(f"part {part!r}: use all, sentence or box")
    if ctx.identify_files.effects is None:
        return None
    c = claims(ctx)
    paper, controls, added = the_papers(c), c[is_control(c)], c[is_added(c) & ~is_control(c)]
    evidence = name not in NO_GROUND_TRUTH
    out = [answer_sentence(label, c, evidence) + again_alone(ctx), ""] if part != "box" else []
    if part != "sentence":
        out += [
            f":::{{admonition}} {label}: the paper's claims: {tally(paper)}; this book's: {tally(added, True)}"
            + ("" if evidence else " (checks of the machinery, not evidence for or against the paper)"),
            ":class: tip",
            "",
            f"Computed by `arithmech.claims.decide` from `results/{name}/`; each claim links to its rule "
            f"([the rules]({RULES_PAGE}), the same for every model); *inconclusive*: the results it needs are "
            "missing or their intervals do not decide it.",
            "",
            findings_table(paper),
            "",
            "Claims this book adds (not the paper's, counted apart):",
            "",
            findings_table(added),
            "",
            "Controls of the method, apart from the claims and their count:",
            "",
            controls_table(controls),
            ":::",
            "",
            *confirmation_box(ctx.confirmation(), label),
        ]
    return "\n".join(out).rstrip("\n")


def confirmation_box(c: Confirmation | None, label: str) -> list[str]:
    """Table 1's confirmation ``c`` where a protocol was written: its status and one sentence per contrast
    (:mod:`arithmech.table1.confirmation`), apart from the exploration's rules above."""
    if c is None:
        return []
    return [
        f":::{{admonition}} {label}: Table 1 confirmed on fresh seeds (contrasts written before their runs)",
        ":class: tip",
        "",
        confirmation.status(c),
        "",
        *[f"* {line}" for line in confirmation.answers(c)],
        ":::",
        "",
    ]


def rules_page(runs: Iterable[tuple[str, str, Context]]) -> str:
    """Markdown: the rules' provenance sentence (:func:`provenance_sentence`); per model ``(name, label, its results
    folder read as a Context)`` with results, every claim's rule and version, this run's numbers and the verdict, the
    controls in a table of their own; then the changelog (:func:`changelog_table`) — the page the introduction's
    findings link to."""
    out = [provenance_sentence(), ""]
    for name, label, ctx in runs:
        if ctx.identify_files.effects is not None:
            c = claims(ctx)
            out += [
                f"## {label}",
                "",
                f"From `results/{name}/` (the paper's claims: {tally(c)}; the claims "
                f"this book adds: {tally(c, True)}).",
                "",
                claims_table(c[~is_control(c)]),
                "",
                "Controls of the method (not claims of the paper, not counted above):",
                "",
                claims_table(c[is_control(c)]),
                "",
            ]
    if len(out) == 2:
        out += ["*No results yet.*", ""]
    out += [
        "## Changelog",
        "",
        "Every version of every rule, reconstructed from git (`arithmech.claims.changelog`): "
        "*results it decides existed then* says whether git already held the results the rule decides when "
        "that version was written.",
        "",
        changelog_table(),
    ]
    return "\n".join(out).rstrip("\n")
