"""What a reader sees around a chapter's computations: findings first, machinery hidden, tidy tables.

* :func:`results_box` — the introduction's box per model: the paper's claims, this run's numbers and
  a verdict (*holds* / *does not hold* / *inconclusive*), all read from
  :func:`arithmech.claims.rules.claims` on ``results/<model>/``; never typed.
  :func:`arithmech.report.build.book.write_generated` writes it to ``book/_generated/findings.md``, which the
  introduction includes.
* :func:`chapter_end` — a chapter's last cell: glues the chapter's "what this run found" (shown under
  its title through ``{glue:md}``) and prints a footer naming the model the page actually ran on.
* :func:`hide_injected` — tags papermill's injected-parameters cell of an executed chapter ``remove-cell``
  (papermill writes it untagged but for ``injected-parameters``; MyST-NB hides cells by tag only).
* :func:`use_table_display` — pandas frames shown as books show tables: no index column, numbers
  rounded, "—" for a missing value, long tables folded into a ``<details>``; in every table (styled ones
  too) a column of True/False/None reads as words (:func:`readable`).
* :func:`answer_token_sentence` — the one sentence a page prints under a table or a view of answer tokens,
  naming the answer-token rule its files record (:data:`arithmech.data.pairs.ANSWER_TOKENS`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from arithmech.claims import changelog
from arithmech.claims.rule_texts import ADDED, BY_ID, RULES
from arithmech.claims.rules import claims
from arithmech.core import results
from arithmech.report.views.tables import setting_name
from arithmech.steps.config import Identify

# What each answer-token rule scores (arithmech.data.pairs' docstring), as a clause of a sentence.
ANSWER_TOKEN_RULES = {
    "last-digit": "the prompt carries the answer's leading digits and the scored token is its last digit "
    '("3 + 9 = 1" → "2"), which depends on both operands',
    "single-token": 'only pairs whose whole answer is one token are drawn ("3 + 4 =" → "7")',
    "first": 'the scored token is the answer\'s first token, the paper\'s rule ("3 + 9 =" → "1", as for '
    "every sum from 10 to 18)",
}

VERDICT = {True: "holds", False: "does not hold", None: "inconclusive"}
MISSING = "—"
FOLD_ROWS = 12  # tables longer than this are folded
# Columns whose True/False/None is a rule's verdict (holds / does not hold / inconclusive); any other column of
# True/False/None is a yes/no question (yes / no / —).
VERDICT_COLUMNS = ("holds", "verdict")


def _missing(x: Any) -> bool:
    return x is None or x is pd.NA or x is pd.NaT or (isinstance(x, float) and x != x)


def verdict(holds: Any) -> str:
    """``True`` → "holds", ``False`` → "does not hold", ``None``/NaN → "inconclusive"."""
    if _missing(holds):
        return VERDICT[None]
    return VERDICT[bool(holds)]


def yes_no(x: Any) -> str:
    """``True`` → "yes", ``False`` → "no", ``None``/NaN → "—": a flag as a reader reads it."""
    return MISSING if _missing(x) else ("yes" if x else "no")


def _is_flag(col: pd.Series) -> bool:
    """Whether a column holds only True/False (numpy's too) and missing values, at least one of them a flag."""
    seen = [x for x in col if not _missing(x)]
    return bool(seen) and all(isinstance(x, (bool, np.bool_)) for x in seen)


def flag_columns(df: pd.DataFrame) -> dict[str, Any]:
    """Each True/False/None column of ``df`` with the function that words it: :func:`verdict` for the
    :data:`VERDICT_COLUMNS`, :func:`yes_no` for the rest."""
    return {c: verdict if c in VERDICT_COLUMNS else yes_no for c in df.columns if _is_flag(df[c])}


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its True/False/None columns as words (:func:`flag_columns`); the one helper every table a
    reader sees goes through (:func:`table_html`, :func:`styler_html`), so no page shows a Python value."""
    words = flag_columns(df)
    return df.assign(**{c: df[c].map(f) for c, f in words.items()}) if words else df


def _md_cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _version(rule_id: str) -> str:
    return f"v{BY_ID[rule_id].version}" if rule_id in BY_ID else MISSING


def claims_table(claims: pd.DataFrame) -> str:
    """Markdown table ``claim | paper | rule (version) | this run | verdict`` of a claims frame (see
    :func:`arithmech.claims.rules.claims`); the version's history is in :func:`changelog_table`."""
    paper_col = next(c for c in claims.columns if c.startswith("paper"))
    rows = [
        "| claim | paper (LLaMA2-7B) | rule (its version) | this run | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for _, r in claims.iterrows():
        rows.append(
            f"| {_md_cell(r['claim'])} | {_md_cell(r[paper_col])} | {_md_cell(r['rule'])} ({_version(r['id'])}) | "
            f"{_md_cell(r['here'])} | **{verdict(r['holds'])}** |"
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
    """The rows that are claims this book adds, not the paper's (:data:`arithmech.claims.rules.ADDED`): counted
    apart from the paper's claims (issue #41: five of "the paper's 16" were not the paper's)."""
    return claims["id"].isin(ADDED) if "id" in claims else pd.Series(False, index=claims.index)


def the_papers(claims: pd.DataFrame) -> pd.DataFrame:
    """The paper's own claims of a claims frame: neither controls nor the book's added claims."""
    return claims[~is_control(claims) & ~is_added(claims)]


def answer_sentence(label: str, claims: pd.DataFrame) -> str:
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
        f"**{label}**: {len(by['holds'])} of the paper's {n} claims hold",
        f"{len(by['does not hold'])} do not" + (f" ({lower(by['does not hold'])})" if by["does not hold"] else ""),
        f"{len(by['inconclusive'])} are undecided (missing results, or intervals that do not decide)",
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
    return f"{parts[0]}; {parts[1]}; {parts[2]}: {picture}.{extra}"


def findings_table(claims: pd.DataFrame) -> str:
    """Markdown table ``claim | paper | this run | verdict`` (each claim links to its rule on the rules page)."""
    paper_col = next(c for c in claims.columns if c.startswith("paper"))
    rows = ["| claim | paper (LLaMA2-7B) | this run | verdict |", "| --- | --- | --- | --- |"]
    for _, r in claims.iterrows():
        rows.append(
            f"| [{_md_cell(r['claim'])}]({RULES_PAGE}) | {_md_cell(r[paper_col])} | {_md_cell(r['here'])} | "
            f"**{verdict(r['holds'])}** |"
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
        f"{v.count('holds')} of {n} claims hold, {v.count('does not hold')} do not, "
        f"{v.count('inconclusive')} inconclusive"
    )


def controls_table(claims: pd.DataFrame) -> str:
    """Markdown table ``control | this run | verdict`` of the control rows of a claims frame (:func:`is_control`):
    the checks of the method, shown apart from the paper's claims and never in their :func:`tally`."""
    rows = ["| control (not a claim of the paper) | this run | verdict |", "| --- | --- | --- |"]
    for _, r in claims[is_control(claims)].iterrows():
        name = r["claim"].replace(" (beyond the paper: a control)", "").replace(" (control)", "")
        rows.append(f"| [{_md_cell(name)}]({RULES_PAGE}) | {_md_cell(r['here'])} | **{verdict(r['holds'])}** |")
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
    """Markdown table of :data:`arithmech.claims.changelog.CHANGELOG` (and the dropped rules): rule, version, date,
    commit, what changed, whether the results it decides existed then."""
    rows = [
        "| rule, version | date, commit | what changed | results it decides existed then |",
        "| --- | --- | --- | --- |",
    ]
    for c in (*changelog.CHANGELOG, *changelog.DROPPED):
        name = f"`{c.rule}` v{c.version}" + ("" if c.rule in BY_ID else " (dropped)")
        rows.append(f"| {name} | {c.date} `{c.commit}` | {_md_cell(c.what)} | {_md_cell(c.results)} |")
    return fixed_table("\n".join(rows), "arithmech-changelog")


def results_box(
    root: Path, models: Iterable[tuple[str, str]], results_dir: str = "results", part: str = "all"
) -> str | None:
    """Markdown: per ``(folder name, label)`` whose identify results exist in ``root/results_dir/<name>``, the
    answer sentence (:func:`answer_sentence`) and an admonition with the findings; ``None`` when none has results
    (the book then shows a note). ``part``: ``"sentence"`` or ``"box"`` for one of the two only (the introduction
    puts every model's sentence first, then Fig. 1, then the boxes)."""
    if part not in ("all", "sentence", "box"):
        raise ValueError(f"part {part!r}: use all, sentence or box")
    out = []
    for name, label in models:
        folder = Path(root) / results_dir / name
        if not results.exists(folder, "effects.csv"):
            continue
        c = claims(folder)
        paper, controls, added = the_papers(c), c[is_control(c)], c[is_added(c) & ~is_control(c)]
        out += [answer_sentence(label, c), ""] if part != "box" else []
        if part == "sentence":
            continue
        out += [
            f":::{{admonition}} {label}: the paper's claims: {tally(paper)}; this book's: {tally(added, True)}",
            ":class: tip",
            "",
            f"Computed by `arithmech.claims.rules` from `{results_dir}/{name}/`; each claim links to its rule "
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
        ]
    return "\n".join(out).rstrip("\n") if out else None


def rules_page(root: Path, models: Iterable[tuple[str, str]], results_dir: str = "results") -> str:
    """Markdown: the rules' provenance sentence (:func:`provenance_sentence`); per model with results, every
    claim's rule and version, this run's numbers and the verdict, the controls in a table of their own; then the
    changelog (:func:`changelog_table`) — the page the introduction's findings link to."""
    out = [provenance_sentence(), ""]
    for name, label in models:
        folder = Path(root) / results_dir / name
        if results.exists(folder, "effects.csv"):
            c = claims(folder)
            out += [
                f"## {label}",
                "",
                f"From `{results_dir}/{name}/` (the paper's claims: {tally(c)}; the claims "
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


def hide_injected(nb_path: Path) -> bool:
    """Tag papermill's ``injected-parameters`` cell of ``nb_path`` ``remove-cell``; True if it changed."""
    nb = json.loads(Path(nb_path).read_text())
    changed = False
    for cell in nb.get("cells", []):
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
            changed = True
    if changed:
        Path(nb_path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return changed


def _footer(model_name: str, params) -> str:
    """The page's last line: the model and the parameters (a dict or a chapter config) it ran with."""
    values = params.as_dict() if hasattr(params, "as_dict") else dict(params)
    shown = ", ".join(f"`{k}={list(v) if isinstance(v, tuple) else v!r}`" for k, v in values.items() if k != "model")
    return (
        f"*This page was executed on the model **{model_name}** by `python -m arithmech book`"
        + (f" with {shown}" if shown else "")
        + ". Every chapter's parameters and how to re-run it on "
        "another model: [Parameters](appendix_parameters.md).*"
    )


def chapter_end(findings: list[str], model_name: str, params=None) -> None:
    """A chapter's last cell: glue ``findings`` (3–5 computed lines) as the markdown the chapter's
    "What this run found" box shows (``{glue:md} findings``), and display the footer naming ``model``."""
    from IPython.display import Markdown, display  # lazy: the book extra (a kernel)
    from myst_nb import glue  # lazy: the book extra

    glue("findings", Markdown("\n".join(f"* {line}" for line in findings)), display=False)
    display(Markdown(_footer(model_name, params or {})))


def answer_token_sentence(rule: str, identify_rule: str | None = None) -> str:
    """One sentence naming the answer-token ``rule`` a table or view was scored with, read by the caller from
    what its step recorded (``run.json``, the explorer's ``prompts`` table), never typed; it says whether that
    is ``identify_rule`` (the rule of identify's files beside it) or, without one, identify's default."""
    if rule not in ANSWER_TOKEN_RULES:
        raise ValueError(f"answer token {rule!r}: use one of {', '.join(ANSWER_TOKEN_RULES)}")
    if identify_rule:
        tail = (
            "the rule identify's files here were measured with"
            if rule == identify_rule
            else f"identify's files here were measured with `{identify_rule}`"
        )
    else:
        default = Identify.__dataclass_fields__["answer_token"].default
        tail = "identify's default rule" if rule == default else f"identify's default is `{default}`"
    return f'Scored under `answer_token = "{rule}"`: {ANSWER_TOKEN_RULES[rule]}; {tail}.'


# ----------------------------------------------------------------------------------------- tables
def _fmt(x: Any) -> str:
    if x is None or (isinstance(x, float) and x != x) or x is pd.NA or x is pd.NaT:
        return MISSING
    if isinstance(x, (bool, np.bool_)):
        return yes_no(x)
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) >= 1000):
        return f"{int(x):,}"
    if isinstance(x, float):
        return f"{x:,.1f}" if abs(x) >= 100 else f"{x:.3g}" if abs(x) < 0.001 else f"{x:.3f}".rstrip("0").rstrip(".")
    return str(x)


def table_html(df: pd.DataFrame) -> str:
    """HTML of ``df`` without its index (unless it is a named one), numbers rounded, "—" for missing;
    folded into ``<details>`` past :data:`FOLD_ROWS` rows."""
    d = df
    if d.index.name is not None or isinstance(d.index, pd.MultiIndex):
        d = d.reset_index()
    d = readable(d.astype(object).where(d.notna(), None))
    body = d.style.hide(axis="index").format(_fmt).set_table_attributes('class="dataframe arithmech-table"').to_html()
    if len(d) > FOLD_ROWS:
        return (
            f"<details><summary>table: {len(d)} rows × {d.shape[1]} columns (click to show)</summary>{body}</details>"
        )
    return body


def styler_html(styler) -> str:
    """HTML of a pandas ``Styler`` (a table a chapter formats itself) with its True/False/None columns as words
    (:func:`flag_columns`); the chapter's own formats of the other columns are kept, its object untouched."""
    words = flag_columns(styler.data)
    s = copy.deepcopy(styler)  # format() edits in place; the chapter's object stays as it was
    for c, f in words.items():
        s = s.format(f, subset=[c])
    return s.to_html()


def use_table_display() -> None:
    """Show every pandas DataFrame with :func:`table_html`, and every Styler with :func:`styler_html`, in this
    IPython session (no-op outside one)."""
    try:
        ip = get_ipython()  # noqa: F821 (defined in IPython)
    except NameError:
        return
    from pandas.io.formats.style import Styler  # lazy: imports jinja2 (the book extra)

    html = ip.display_formatter.formatters["text/html"]
    html.for_type(pd.DataFrame, table_html)
    html.for_type(Styler, styler_html)


# ------------------------------------------------------------------------------- chapter findings
def claim_lines(claims: pd.DataFrame, ids) -> list[str]:
    """``"<claim>: **holds** (<this run>)"`` for the claims ``ids`` (ids of :mod:`arithmech.claims.rules`,
    in that order; an id the frame lacks is a ``KeyError``)."""
    rows = claims.set_index("id").loc[list(ids)].reset_index()
    return [f"{r['claim']}: **{verdict(r['holds'])}** ({r['here']})" for _, r in rows.iterrows()]


def finetune_lines(records: list[dict], names: dict[str, str] | None = None) -> list[str]:
    """One line per benchmark: base → each record's accuracy (with its 95% interval and n where the
    record has them), from fine-tune records (:func:`arithmech.steps.finetune.run_finetune`)."""
    names = names or {}
    pct = lambda m: f"{m['value']:.0%} [{m['ci'][0]:.0%}, {m['ci'][1]:.0%}]" if m.get("ci") else f"{m['value']:.0%}"
    out = []
    for b, m in records[0]["base"].items():
        runs = "; ".join(f"{setting_name(r)} {pct(r['results'][b])}" for r in records if b in r["results"])
        n = f" (n = {m['n']})" if m.get("n") else ""
        out.append(f"{names.get(b, b)}{n}: base {pct(m)} → {runs}")
    return out
