"""Benchmarks of Table 1 (arithmech.evals.benchmarks): readers, splits, prompts, answer extraction.

Batched scoring against one-prompt-at-a-time references is in ``parity/test_evals_parity.py``.
"""
from __future__ import annotations

import pytest

from arithmech.evals import benchmarks

DATA = benchmarks.data_dir()


needs_data = pytest.mark.skipif(not (DATA / "gsm8k" / "test.jsonl").exists(),
                                reason=f"benchmark folder {DATA} is absent (set ARITHMECH_DATA to the "
                                       "../shared/data layout to run these)")



@pytest.fixture(scope="module")
def math_splits():
    """The AddSub / SingleEq / SVAMP train/test splits drawn with seed 0."""
    return benchmarks.math_splits(seed=0)


def test_extract_answer_rules():
    """Protects: the documented rule: commas stripped, first number after "The answer is", else the last
    number, trailing period ignored, negatives and decimals kept, None when there is no number."""
    assert benchmarks.extract_answer("She pays $1,080 in total. The answer is 1,080.") == 1080
    assert benchmarks.extract_answer("The answer is -3.5, not 7") == -3.5
    assert benchmarks.extract_answer("3 apples and 4 pears make 7.") == 7
    assert benchmarks.extract_answer("the answer is: 12 (since 3 * 4)") == 12
    assert benchmarks.extract_answer("no idea") is None
    assert benchmarks.is_correct(benchmarks.extract_answer("The answer is 9.43"), 9.43) and not benchmarks.is_correct(None, 0.0)


@needs_data
def test_row_counts_match_readme():
    """Protects: the readers parse every row of the shared files (counts from the data README)."""
    assert len(benchmarks.read_math("gsm8k", split="train")) == 7473 and len(benchmarks.read_math("gsm8k")) == 1319
    assert [len(benchmarks.read_math(n)) for n in ("addsub", "singleeq", "svamp")] == [395, 508, 1000]
    assert len(benchmarks.read_mmlu("test")) == 14042 and len(benchmarks.read_mmlu("dev")) == 285
    assert len(benchmarks.read_csqa("dev")) == 1221


@needs_data
def test_answer_extraction_on_real_rows(math_splits):
    """Protects: on every real row of the four math sets the gold answer survives formatting and extraction
    (GSM8K's raw '#### 1,080' solutions included), and SFT completions carry the right number."""
    for name in benchmarks.MATH:
        rows = benchmarks.read_math(name) + (benchmarks.read_math(name, split="train") if name == "gsm8k" else [])
        for p in rows:
            _, completion = benchmarks.math_example(p)
            assert benchmarks.is_correct(benchmarks.extract_answer(completion), p.answer), (name, p.id, completion)
    raw = [l for l in (DATA / "gsm8k" / "test.jsonl").read_text().splitlines() if "," in l.split("####")[-1]]
    assert len(raw) == 14                                    # README: 14 test answers with separators
    import json
    for line in raw:
        r = json.loads(line)
        gold = float(r["answer"].split("####")[-1].replace(",", ""))
        assert benchmarks.extract_answer(r["answer"]) == gold
    svamp = benchmarks.read_math("svamp")[0]
    assert svamp.question.startswith("Each pack of dvds costs 76 dollars.") and svamp.answer == 51.0


@needs_data
def test_splits_seeded_disjoint_and_deduplicated(math_splits):
    """Protects: the AddSub/SingleEq/SVAMP splits are seeded and reproducible, no normalized training
    question occurs in any test set, training sets hold no repeats, and a question shared by two sets
    lands on the same side in both."""
    again = benchmarks.math_splits(seed=0)
    assert all([p.id for p in math_splits[n][s]] == [p.id for p in again[n][s]]
               for n in benchmarks.MATH for s in ("train", "test"))
    other = benchmarks.math_splits(seed=1)
    assert [p.id for p in other["addsub"]["test"]] != [p.id for p in math_splits["addsub"]["test"]]
    test_keys = {benchmarks.normalize_question(p.question) for s in math_splits.values() for p in s["test"]}
    train_keys = [benchmarks.normalize_question(p.question) for s in math_splits.values() for p in s["train"]]
    assert not test_keys & set(train_keys) and len(train_keys) == len(set(train_keys))
    add = {benchmarks.normalize_question(p.question) for p in benchmarks.read_math("addsub")}
    seq = {benchmarks.normalize_question(p.question) for p in benchmarks.read_math("singleeq")}
    shared = add & seq
    assert shared                                             # both sets come from MAWPS
    add_test = {benchmarks.normalize_question(p.question) for p in math_splits["addsub"]["test"]}
    seq_test = {benchmarks.normalize_question(p.question) for p in math_splits["singleeq"]["test"]}
    assert {k for k in shared if k in add_test} == {k for k in shared if k in seq_test}
    for n in ("addsub", "singleeq", "svamp"):
        frac = len(math_splits[n]["test"]) / (len(math_splits[n]["test"]) + len(math_splits[n]["train"]))
        assert 0.2 < frac < 0.45, (n, frac)                   # ~test_frac, after dedup


def test_fewshot_prompt_format():
    """Protects: the documented few-shot math format (also the SFT format) and MMLU's Hendrycks layout."""
    shot = benchmarks.Problem("gsm8k", "t-0", "Tom has 3 apples and buys 2. How many?", 5.0, "Tom has 3 + 2 = 5 apples.")
    q = benchmarks.Problem("addsub", "1", "Sam had 1,000 cards and lost 1. How many are left?", 999.0)
    assert benchmarks.math_prompt(q, [shot]) == ("Question: Tom has 3 apples and buys 2. How many?\n"
                                        "Answer: Tom has 3 + 2 = 5 apples. The answer is 5.\n\n"
                                        "Question: Sam had 1,000 cards and lost 1. How many are left?\nAnswer:")
    assert benchmarks.math_example(q)[1] == " The answer is 999."
    assert benchmarks.math_example(benchmarks.Problem("singleeq", "2", "x?", 1.84))[1] == " The answer is 1.84."
    c = benchmarks.Choice("abstract_algebra", "What is 1+1?", ("1", "2", "3", "4"), "B")
    assert benchmarks.choice_prompt(c, [c]) == (
        "The following are multiple choice questions (with answers) about abstract algebra.\n\n"
        "What is 1+1?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer: B\n\n"
        "What is 1+1?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer:")


@needs_data
def test_multiple_choice_rows_real():
    """Protects: MMLU (quoted CSV fields with commas) and CSQA rows parse into 4 / 5 choices and a letter."""
    dev = [c for c in benchmarks.read_mmlu("dev") if c.subject == "abstract_algebra"]
    assert dev[1].choices == ("True, True", "False, False", "True, False", "False, True") and dev[1].answer == "B"
    assert all(len(c.choices) == 4 and c.answer in "ABCD" for c in benchmarks.read_mmlu("test"))
    cs = benchmarks.read_csqa("dev")
    assert cs[0].choices == ("bank", "library", "department store", "mall", "new york") and cs[0].answer == "A"
    assert all(len(c.choices) == 5 and c.answer in "ABCDE" for c in cs)


def test_missing_data_one_clear_error(tmp_path):
    """Protects: a missing benchmark file raises one error naming the path and what to do."""
    with pytest.raises(benchmarks.MissingDataError, match=r"svamp.*SVAMP\.json' does not exist.*ARITHMECH_DATA"):
        benchmarks.read_math("svamp", root=tmp_path)
    with pytest.raises(ValueError, match="unknown benchmarks"):
        benchmarks.evaluate(None, None, ["gsm9k"])


def test_hf_source_needs_datasets():
    """Protects: source='hf' without the datasets package says how to install it or use local files."""
    try:
        import datasets  # noqa: F401
        pytest.skip("datasets is installed; the offline message is not reachable")
    except ImportError:
        with pytest.raises(ImportError, match="pip install datasets"):
            benchmarks.read_math("gsm8k", source="hf")
