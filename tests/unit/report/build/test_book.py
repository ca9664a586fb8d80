"""The book's ``--set`` keys and values checked before any chapter runs (arithmech.report.build.book)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arithmech.report.build import book, plan

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def cfg():
    return plan.load_config(REPO)


BAD_SETS = [
    (["modle=x"], r"--set 'modle': no chapter to run has this parameter; names: .*model"),
    (["identify.n_sample=3"], r"chapter 'identify' has no parameter n_sample; its parameters cell declares: .*n_samples"),
    (["identify.n_samples=-3"], r"chapter 'identify': parameter n_samples=-3 is below 1"),
    (["n_samples=many"], r"parameter n_samples='many': expected an integer"),
    (["seed=1.5"], r"parameter seed=1.5: expected an integer"),
    (["device=tpu"], r"device 'tpu': use one of cpu, cuda, mps"),
    (["identify.stability_sizes=5"], r"parameter stability_sizes=5: expected a list"),
    (["finetune.scale=-2"], r"chapter 'finetune': parameter scale=-2.0 is below 1e-09"),
    (["nokey"], r"expected key=value"),
    (["nochapter.n=1"], r"not an executed chapter"),
]


@pytest.mark.parametrize("sets,match", BAD_SETS, ids=[s[0] for s, _ in BAD_SETS])
def test_book_set_typo_or_bad_value_refused_before_any_chapter(cfg, monkeypatch, sets, match):
    """Protects: a misspelt ``--set`` key (global or per chapter) or a value its chapter's check cell would refuse
    is one BookArgumentError naming the key and what is allowed, raised while planning, before any chapter
    runs (execution is booby-trapped); the same values through the CLI exit 2 with one line."""
    monkeypatch.setattr(book, "execute_chapter", lambda *a, **k: pytest.fail("a chapter ran"))
    with pytest.raises(plan.BookArgumentError, match=match) as e:
        book.build(REPO, sets=sets, html=False)
    assert "\n" not in str(e.value)


def test_book_set_valid_values_reach_their_chapters(cfg):
    """Protects the accepting side: valid global and per-chapter values plan without error and reach exactly the
    chapters that declare them; a global key declared only by chapters not run with --only is refused."""
    chapters = {c.name: c.parameters for c in plan.plan(REPO, cfg, ["seed=2", "identify.n_samples=32",
                                                                     "finetune.k_heads=[2, 3]"])}
    assert chapters["identify"]["n_samples"] == 32 and chapters["finetune"]["k_heads"] == [2, 3]
    assert all(p["seed"] == 2 for n, p in chapters.items() if n != "appendix_computer_vs_llm")
    with pytest.raises(plan.BookArgumentError, match="'top_k'"):
        plan.plan(REPO, cfg, ["top_k=3"], only="identify")
