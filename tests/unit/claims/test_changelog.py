"""Versioned rules: every rule's version, text and history agree, and the book's wording
about when the rules were fixed follows from that history, never from a typed sentence.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from arithmech.claims import changelog, decide
from arithmech.claims.evidence import Context
from arithmech.claims.rule import Rule
from arithmech.report.views import findings, table_display

REPO = Path(__file__).resolve().parents[3]


def test_every_rule_version_is_its_number_of_changelog_entries():
    """Protects: a rule's ``version`` is how many times the changelog says it was written or changed, its
    entries are numbered 1..n without a gap, and each has a date, a commit and a results verdict — so a rule
    bumped without an entry, or logged without a bump, fails here."""
    for r in decide.RULES:
        h = changelog.history(r.id)
        assert h, f"{r.id} has no changelog entry"
        assert r.version == len(h) == changelog.version(r.id), f"{r.id}: version {r.version}, {len(h)} entries"
        assert [c.version for c in h] == list(range(1, len(h) + 1)), r.id
        assert [c.date for c in h] == sorted(c.date for c in h), f"{r.id}: entries out of date order"
    for c in (*changelog.read().changes, *changelog.read().dropped):
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", c.date), c
        assert re.fullmatch(r"[0-9a-f]{7,40}|this commit", c.commit), c
        assert re.match(r"(yes|no): \S", c.results), f"{c.rule} v{c.version}: results must say yes/no and which run"


def test_the_reader_gives_one_entry_per_rule_a_change_names(tmp_path):
    """Protects the data file's reading: a [[change]] naming several rules (one commit, one reason) is one entry
    per rule in the file's order, the reader is cached (one parse per path) and what it returns cannot be edited;
    an entry with a key missing or misspelt is refused, naming it, rather than read as something else."""
    path = tmp_path / "changelog.toml"
    path.write_text('[digest]\na = "0123456789ab"\n\n[[dropped]]\nversion.z = 1\ndate = "2026-01-01"\n'
                    'commit = "abcdef0"\nwhat = "written"\nresults = "no: none"\n\n'
                    '[[change]]\nversion.b = 2\nversion.a = 1\ndate = "2026-01-02"\ncommit = "abcdef1"\n'
                    'what = """\\\n  one \\\n  reason"""\nresults = "yes: run 1"\n')
    log = changelog.read(path)
    assert log is changelog.read(path) and log.dropped == (changelog.Change("z", 1, "2026-01-01", "abcdef0", "written", "no: none"),)
    assert log.changes == (changelog.Change("b", 2, "2026-01-02", "abcdef1", "one reason", "yes: run 1"),
                           changelog.Change("a", 1, "2026-01-02", "abcdef1", "one reason", "yes: run 1"))
    assert dict(log.digests) == {"a": "0123456789ab"}
    with pytest.raises(TypeError):
        log.digests["a"] = "x"                                   # type: ignore[index]
    bad = tmp_path / "bad.toml"
    bad.write_text(path.read_text().replace("results =", "result ="))
    with pytest.raises(ValueError, match="result"):
        changelog.read(bad)


def test_every_entry_names_a_known_rule():
    """Protects the changelog from drifting away from the rules: every entry names a rule of RULES, and the
    dropped rules' entries name none (their ids were retired)."""
    known = set(decide.BY_ID) | set(changelog.read().rule_sets)
    assert not {c.rule for c in changelog.read().changes} - known, "changelog entries for unknown rules"
    assert not {c.rule for c in changelog.read().dropped} & known, "a dropped rule is still in RULES"


def test_a_rule_set_outside_the_claims_is_logged_and_fingerprinted():
    """Protects the rule sets' place in the one changelog (the accounts, the planted scores, the planted seeds): each
    has entries numbered 1..n with a date, a commit and a results verdict, and its digest is the first 12 digits of
    the hash its results record (or of its text), so editing a threshold of arithmech/accounts/rules.py without an
    entry fails here; the rules page names them as rule sets, not as dropped rules."""
    import hashlib
    import importlib

    from arithmech.report.views.findings import changelog_table
    log = changelog.read()
    assert set(log.rule_sets) == {"accounts", "planted", "planted-seeds", "planted-table1"}
    for rule_set, dotted in log.rule_sets.items():
        module, name = dotted.rsplit(".", 1)
        source = getattr(importlib.import_module(module), name)
        fingerprint = source() if callable(source) else hashlib.sha256(source.encode()).hexdigest()
        assert log.digests[rule_set] == fingerprint[:12], f"{rule_set}: changed without an entry ({fingerprint[:12]})"
        assert [c.version for c in changelog.history(rule_set)] == list(range(1, changelog.version(rule_set) + 1))
    assert "`accounts` v1 (rule set)" in changelog_table() and "(dropped)" not in changelog_table().split("precise-")[0]


def test_a_rule_whose_text_changes_needs_a_new_entry():
    """Protects the history from silent edits: each rule's claim, rule text and the numbers its decider reads
    hash to the digest recorded with its latest entry; editing any (a constant it prints, such as TOP or K, or
    one it only decides with) without logging it fails."""
    now = {r.id: changelog.digest(r.claim, r.rule, changelog.decider_constants(r.decide)) for r in decide.RULES}
    stale = {k: v for k, v in now.items() if changelog.read().digests.get(k) != v}
    assert not stale, ("rule text changed without a changelog entry: add one, bump the version and set its digest "
                       f"in changelog.toml to {stale}")
    assert set(changelog.read().digests) == set(decide.BY_ID) | set(changelog.read().rule_sets)


def test_pre_registered_means_no_version_after_results(monkeypatch):
    """Protects the one definition the book's sentence rests on: a rule counts as fixed before its results only
    if *every* version of it was written before the results it decides existed."""
    fake = (changelog.Change("a", 1, "2026-01-01", "abcdef0", "written", "no: none"),
            changelog.Change("b", 1, "2026-01-01", "abcdef0", "written", "no: none"),
            changelog.Change("b", 2, "2026-01-02", "abcdef1", "changed", "yes: run 1"))
    monkeypatch.setattr(changelog, "read", lambda: changelog.Changelog(fake, (), {}, {}))
    assert changelog.pre_registered("a") and not changelog.pre_registered("b") and not changelog.pre_registered("unknown")
    never = lambda ctx: ("", None)
    rules = (Rule("a", "A", "p", "r", 1, never), Rule("b", "B", "p", "r", 2, never))
    s = findings.provenance_sentence(rules)
    assert s.startswith("1 of the 2 rules are unchanged since before the results they decide existed (`a`); "
                        "1 were written or changed after such results existed (`b`)")


def test_provenance_sentence_counts_the_real_changelog():
    """Protects the introduction's sentence (it replaced a typed "written before the run"): its numbers are the
    changelog's, for the rules there are."""
    pre = [r.id for r in decide.RULES if changelog.pre_registered(r.id)]
    s = findings.provenance_sentence()
    assert s.startswith(f"{len(pre)} of the {len(decide.RULES)} rules are unchanged")
    assert all(f"`{r.id}`" in s for r in decide.RULES)


def test_rules_page_shows_the_changelog_and_keeps_controls_apart(tmp_path):
    """Protects the rules page: it opens with the computed provenance sentence and ends with every changelog
    entry (dropped rules marked), even before any result exists."""
    page = findings.rules_page([("none", "No model", Context(tmp_path / "results" / "none"))])
    assert page.startswith(findings.provenance_sentence()) and "*No results yet.*" in page and "## Changelog" in page
    sets = changelog.read().rule_sets
    for c in changelog.read().changes:
        kind = " (rule set)" if c.rule in sets else ""
        assert f"| `{c.rule}` v{c.version}{kind} | {c.date} `{c.commit}` |" in page, (c.rule, c.version)
    assert all(f"`{c.rule}` v{c.version} (dropped)" in page for c in changelog.read().dropped)


def _frame(holds: list, controls: int) -> pd.DataFrame:
    n = len(holds)
    claims = [f"Claim {i}" for i in range(n - controls)] + [f"Check {i} (control)" for i in range(controls)]
    return pd.DataFrame({"id": [f"c{i}" for i in range(n)], "claim": claims, "paper (LLaMA2-7B)": "x", "rule": "r",
                         "here": [f"h{i}" for i in range(n)], "holds": holds})


def test_tally_never_counts_controls_and_controls_have_their_own_table():
    """Protects the claims tally (controls were once counted in it): whatever frame a caller passes — a whole
    claims table, as the SmolLM2 appendix and the rules page do — the tally counts the paper's claims only; the
    controls are shown in a table of their own, each with its verdict."""
    c = _frame([True, False, None, False, True], controls=2)
    assert findings.tally(c) == "1 of 3 claims holds, 1 does not, 1 inconclusive"
    assert findings.tally(c) == findings.tally(c[~findings.is_control(c)])
    t = findings.controls_table(c)
    assert t.count("\n") == 3 and "Check 0" in t and "(control)" not in t and "Claim" not in t
    assert "| h3 | **does not hold** |" in t and "| h4 | **holds** |" in t


# --------------------------------------------------------------- the book's "fixed before the run"
BEFORE = re.compile(r"before (the|any) (run|numbers)\b|before any results? (was|were) read", re.I)
WINDOW = 700                            # characters each side of the phrase that name the rule it is about
# rule sets kept outside the claims' changelog, each with the test that checks in git that the rules' commit
# precedes every result decided under them; naming the module near the phrase backs it
OWN_ORDER_TESTS = {
    "arithmech/accounts/rules.py": ("tests/unit/accounts/test_rules.py",
                                    "test_shipped_signatures_were_committed_after_the_rules_and_decided_under_them"),
    "arithmech/planted/rules.py": ("tests/unit/planted/test_rules.py",
                                   "test_shipped_scores_were_committed_after_the_rules_and_decided_under_them"),
}


def _violations(name: str, text: str) -> list[str]:
    out = []
    for m in BEFORE.finditer(text):
        near = text[max(0, m.start() - WINDOW): m.end() + WINDOW]
        ids = [i for i in decide.BY_ID if re.search(rf"[`'\"]{re.escape(i)}[`'\"]", near)]
        if any(f"`{m}`" in near for m in OWN_ORDER_TESTS):
            continue
        if not ids:
            out.append(f"{name}: '{m.group(0)}' names no rule id near it")
        out += [f"{name}: '{m.group(0)}' next to `{i}`, changed after its results existed" for i in ids
                if not changelog.pre_registered(i)]
    return out


def test_rule_sets_outside_the_changelog_have_their_git_order_test():
    """Protects the exemption above: a module it names exists and its test file holds the git-order test."""
    for module, (test_file, test_name) in OWN_ORDER_TESTS.items():
        assert (REPO / module).is_file(), module
        assert f"def {test_name}(" in (REPO / test_file).read_text(), (test_file, test_name)
    assert _violations("x.md", "The rules were committed before any run (`arithmech/accounts/rules.py`).") == []
    assert _violations("x.md", "The rules were committed before any run (`arithmech/other.py`).") != []


def test_before_the_run_only_beside_rules_the_changelog_shows_unchanged():
    """Protects the book from claiming pre-registration the history does not support: a chapter may say a rule
    was fixed "before the run" only next to the id of a rule whose every version predates its results (the
    changelog); a use naming no rule, or naming one changed after results existed, fails."""
    bad = []
    for p in sorted((REPO / "book").glob("*.md")):
        bad += _violations(p.name, p.read_text())
    assert not bad, "\n".join(bad)


def test_the_before_the_run_check_sees_a_violation():
    """Protects the test above from passing vacuously: the phrase beside a rule changed after results, or beside
    no rule at all, is found; beside a rule logged as unchanged since before its results, it is not."""
    changed = next(r.id for r in decide.RULES if not changelog.pre_registered(r.id))
    clean = next(r.id for r in decide.RULES if changelog.pre_registered(r.id))
    assert _violations("x", f"The rule (`{changed}`), fixed before the run: …")
    assert _violations("x", "The rule, written before any run: …")
    assert not _violations("x", f"The rule (`{clean}`), fixed before the run: …")


@pytest.mark.parametrize("name", [p.name for p in sorted((REPO / "results").glob("*")) if (p / "effects.csv").exists()])
def test_findings_box_counts_claims_and_tables_controls_apart(name):
    """Protects the introduction's box on every results folder present: its title's tally is the paper's claims
    only (the controls' number is not in it), and each control appears, with its verdict, in its own table."""
    ctx = Context(REPO / "results" / name)
    c, box = decide.claims(ctx), findings.results_box(ctx, name, name)
    n_paper = len(findings.the_papers(c))
    assert f"the paper's claims: {findings.tally(c)};" in box and f" of {n_paper} claims hold" in box
    assert f"this book's: {findings.tally(c, True)}" in box
    table = box[box.index("| control (not a claim of the paper)"):]
    for _, r in c[findings.is_control(c)].iterrows():
        assert f"| {r['here']} | **{table_display.verdict(r['holds'])}** |" in table, r["id"]


def test_the_count_keeps_the_papers_claims_apart_from_the_books():
    """Protects the introduction's count (five of "the paper's 16 claims" once were not the paper's, and
    "the selection matters" sat outside the count as a control): the paper's tally counts only the paper's
    claims, the book's added claims (rules.ADDED, selection-matters among them) have their own tally and
    sentence, and the controls are in neither."""
    c = decide.claims(Context(REPO / "results" / "none-such"))            # every rule, each inconclusive: not measured
    paper, added = findings.the_papers(c), c[findings.is_added(c) & ~findings.is_control(c)]
    assert set(added.id) == set(decide.ADDED) and "selection-matters" in set(added.id)
    assert len(paper) == 13 and len(added) == 8 and int(findings.is_control(c).sum()) == 2
    assert findings.tally(c) == "0 of 13 claims hold, 0 do not, 13 inconclusive"
    assert findings.tally(c, True) == "0 of 8 claims hold, 0 do not, 8 inconclusive"
    s = findings.answer_sentence("M", c)
    assert "0 of the paper's 13 claims hold" in s and s.endswith("Of the 8 claims this book adds, 0 of 8 claims hold, "
                                                                 "0 do not, 8 inconclusive.")


def test_a_decider_constant_is_part_of_the_digest(monkeypatch):
    """Protects against moving a verdict without touching the rule's text: a number the decider reads but the
    text does not print (circuit-faithful's MIN_CLUSTERS, read through a helper module; a literal inside
    a decider) changes the rule's digest."""
    from arithmech.methods import faithfulness_rule as faithfulness
    rule = decide.BY_ID["circuit-faithful"]
    before = changelog.digest(rule.claim, rule.rule, changelog.decider_constants(rule.decide))
    assert changelog.decider_constants(rule.decide)["arithmech.methods.faithfulness_rule.MIN_CLUSTERS"] == \
        faithfulness.MIN_CLUSTERS
    monkeypatch.setattr(faithfulness, "MIN_CLUSTERS", faithfulness.MIN_CLUSTERS + 1)
    assert changelog.digest(rule.claim, rule.rule, changelog.decider_constants(rule.decide)) != before
    lits = changelog.decider_constants(decide.BY_ID["key-heads-stable"].decide)
    assert any(k.endswith(":literals") for k in lits)
