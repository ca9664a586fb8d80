"""The counts several pages quote (arithmech.report.views.counts): how many key heads, which heads are studied instead,
how many prompts the Explorer draws — and that the pages take them from there, not from counts of their own
(one model's key heads were once "1" on Identify, its top 10 were "key heads" on Analyze, and the
introduction typed the Explorer's prompt count)."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from arithmech.claims import decide
from arithmech.claims.evidence import Context
from arithmech.identify.claims import THRESHOLD
from arithmech.methods.effects import key_heads as identify_key_heads
from arithmech.report.build import generate
from arithmech.report.views import counts

REPO = Path(__file__).resolve().parents[4]
FOLDERS = sorted(p for p in (REPO / "results").glob("*") if (p / "key_heads.json").exists()
                 and (p / "effects.csv").exists())


def _effects(his: list[float]) -> pd.DataFrame:
    """Four layers × four heads, head i of the list with interval upper end ``his[i]`` (mean 2 points lower) and
    the rest weak; one MLP per layer."""
    rows = [("all", l, str(h), -0.001 * (4 * l + h)) for l in range(4) for h in range(4)]
    df = pd.DataFrame(rows, columns=["task", "layer", "head", "effect_hi"])
    df.loc[: len(his) - 1, "effect_hi"] = his
    mlp = pd.DataFrame([("all", l, "mlp", 0.01) for l in range(4)], columns=df.columns)
    df = pd.concat([df, mlp], ignore_index=True)
    return df.assign(effect=df.effect_hi - 0.02, effect_lo=df.effect_hi - 0.04, logit_diff=df.effect_hi)


def _count(his: list[float]) -> counts.KeyHeads:
    eff = _effects(his)
    return counts.key_heads_of(identify_key_heads(eff, "all", -0.05), eff)


def test_key_head_counts_are_worded_once():
    """Protects the words every page now prints: the count over all the heads, the heads by name ("head 0.0", never
    a bare id), singular and plural without "(s)", the interval rule, the heads passing on the mean alone (the
    paper's rule), and, where no head is key, the top heads by effect rank that the later steps study instead."""
    one = _count([-0.2, -0.04])             # 0.0 key; 0.1's mean (−6%) passes −5%, its interval does not
    assert (one.n, one.n_heads, one.n_mean_below) == (1, 16, 2)
    assert one.summary() == "1 key head of 16 (head 0.0)"
    assert one.sentence() == ("1 key head of 16 (head 0.0): a head is key when the whole 95% interval of its effect "
                              "lies below −5% (2 pass on the mean alone, the paper's rule).")
    three = _count([-0.3, -0.2, -0.1])
    assert three.summary() == "3 key heads of 16 (head 0.0, head 0.1, head 0.2)"
    assert three.studied_phrase() == "the key heads (head 0.0, head 0.1, head 0.2)"
    none = _count([-0.04])
    assert none.summary() == "no key head of 16" and none.n == 0
    assert "1 passes on the mean alone" in none.sentence()
    assert none.studied_phrase().startswith("the top 10 by effect rank (head 0.0, head 3.3, head 3.2,")
    assert (three.studied_label(), none.studied_label()) == ("key", "top 10")
    assert not any("(s)" in s for k in (one, three, none) for s in (k.summary(), k.sentence()))


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_count_pages_quote_is_the_rules_and_analyzes(folder):
    """Protects one number across pages on every results folder present: the count the pages quote (and its
    total) is the one the `key-heads-exist` rule states in the claims table, and the heads the pages say are
    studied are the ones analyze studies."""
    from arithmech.identify.result import Ranking, load_key_heads
    k = counts.key_heads(Ranking.read(folder))
    if k.threshold != THRESHOLD:
        pytest.skip(f"{folder.name} was run with threshold {k.threshold}, not the rule's {THRESHOLD}")
    here = decide.claims(Context(folder), ["key-heads-exist"]).iloc[0].here
    n, total = map(int, re.match(r"(\d+) of (\d+) heads", here).groups())
    assert (k.n, k.n_heads) == (n, total), (k.summary(), here)
    assert [f"{l}.{h}" for l, h in load_key_heads(folder)[0]] == list(k.studied)


def test_round_robin_is_the_draw_the_explorer_makes(embedded_tokenizer):
    """Protects the introduction's prompt count: the templates :func:`round_robin` counts before the page runs are
    the ones ``make_pairs`` draws (the Explorer's draw), prompt for prompt."""
    from arithmech.data import pairs
    drawn, _ = pairs.make_pairs(embedded_tokenizer, "all", n=60, seed=0, draw=pairs.Draw("last-digit", 0, 1))
    assert [s.template for s in drawn] == counts.round_robin(60)


def test_prompt_counts_are_worded_once():
    """Protects the prompt phrase: the Explorer's 144 prompts are 3 of each of the 48 templates; uneven and partial
    draws say so; the counts add up to n; a template that is not one of Fig. 8 or Fig. 10 is refused."""
    c = counts.prompt_count(counts.round_robin(144))
    assert c.phrase() == "144 prompts, 3 of each of the 48 templates of Fig. 8 and Fig. 10"
    assert sum(c.per_template.values()) == 144 and set(c.per_template.values()) == {3}
    assert counts.prompt_count(counts.round_robin(50)).phrase() == \
        "50 prompts, 1 or 2 of each of the 48 templates of Fig. 8 and Fig. 10"
    assert counts.prompt_count(counts.round_robin(20)).spread() == "one of each of 20 of the 48 templates of Fig. 8 and Fig. 10"
    with pytest.raises(ValueError, match="not templates"):
        counts.prompt_count(["add-1", "nope"])


def test_the_introduction_quotes_the_explorer_s_count_as_the_build_gives_it():
    """Protects the introduction's Explorer sentence (``_generated/explorer.md``): its prompt count is the page's own
    parameter as the build gives it (the parameters cell, ``book.yml``, ``--set``), counted by :func:`prompt_count`,
    and the introduction types no count of its own."""
    default = generate.explorer_intro(REPO)
    assert "any of its 144 prompts (3 of each of the 48 templates of Fig. 8 and Fig. 10) on the embedded model and " \
           "SmolLM2-135M" in default
    small = generate.explorer_intro(REPO, ["explorer.n_prompts=48", "explorer.models=[embedded]"])
    assert "any of its 48 prompts (one of each of the 48 templates" in small and "SmolLM2" not in small
    intro = (REPO / "book" / "intro.md").read_text()
    assert "```{include} _generated/explorer.md" in intro
    assert not re.search(r"\b\d+ prompts\b", intro), "the introduction types a prompt count"


def test_chapters_count_key_heads_only_through_this_module():
    """Protects "one function" in the chapters' code: no code cell, nor a page module the chapter calls
    (``arithmech/report/views/<chapter>_page.py``, or any ``page`` or ``*_page`` module its cells import, a wing's
    ``page`` included), counts key heads
    itself (a ``len`` of a key-head list, beyond's stored count, the mean-alone count), the way Identify, Analyze,
    Beyond and the appendices each did; they call :mod:`arithmech.report.views.counts`."""
    from arithmech.report.build.plan import is_notebook, read_notebook
    own = re.compile(r"len\([^()]*key_heads[^()]*\)|n_key_heads_identify|n_heads_mean_below")
    hits, callers = [], set()
    for p in sorted((REPO / "book").glob("*.md")):
        if not is_notebook(p):
            continue
        cells = [c.source for c in read_notebook(p).cells if c.cell_type == "code"]
        pages = {("report.views", f"{p.stem}_page")} | {
            m for c in cells for m in re.findall(r"from arithmech\.([\w.]+) import (\w*page)\b", c)}
        files = [REPO / "arithmech" / Path(*pkg.split(".")) / f"{m}.py" for pkg, m in sorted(pages)]
        sources = [(p.name, c) for c in cells] + [(f.name, f.read_text()) for f in files if f.exists()]
        for name, source in sources:
            hits += [f"{name}: {m.group(0)}" for m in own.finditer(source)]
            if re.search(r"counts\.key_heads(_of)?\(", source):
                callers.add(p.stem)
    assert not hits, "chapters counting key heads themselves:\n" + "\n".join(hits)
    assert {"identify", "analyze", "beyond", "explorer", "appendix_smollm2", "appendix_gsm8k"} <= callers, callers
    assert own.search("len(res.key_heads['heads'])")
