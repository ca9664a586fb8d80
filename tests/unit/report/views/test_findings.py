"""The introduction's answer sentence and findings table (arithmech.report.views.findings), read from the verdicts."""
from __future__ import annotations


def test_the_answer_sentence_and_findings_table_follow_the_verdicts():
    """Protects the introduction's answer: its sentence per model is computed from the verdicts of the
    paper's claims (controls apart), names the claims under each verdict, and its summary word follows them;
    the compact table has one row per claim with its verdict and a link to the rules page."""
    import pandas as pd

    from arithmech.report.views import findings
    c = pd.DataFrame({"id": ["a", "b", "c", "d"], "claim": ["Heads exist", "MLPs act late", "Few heads", "Floor (control)"],
                      "paper (LLaMA2-7B)": ["x"] * 4, "rule": ["r"] * 4, "here": ["h"] * 4,
                      "holds": [True, None, False, True]})
    s = findings.answer_sentence("Model", c)
    assert s.startswith("**Model**: 1 of the paper's 3 claims holds; 1 does not (few heads); 1 is undecided")
    assert "MLPs act late" not in s and "holds only in part" in s and "Floor" not in s
    assert findings.is_control(pd.DataFrame({"claim": ["X (beyond the paper: a control)", "Y (control)", "Z"]})).tolist() \
        == [True, True, False]
    assert "the paper's picture holds." in findings.answer_sentence("M", c.assign(holds=True))
    assert "does not appear" in findings.answer_sentence("M", c.assign(holds=False))
    t = findings.findings_table(c[~findings.is_control(c)])
    assert t.count("\n") == 4 and t.count(f"]({findings.RULES_PAGE})") == 3 and "**inconclusive**" in t


def test_a_model_without_ground_truth_checks_the_machinery():
    """Protects the toy's place in the tally: the embedded model's sentence counts its verdicts as checks of the
    machinery, never as the paper's picture holding or not; a real model's sentence reads the picture."""
    import pandas as pd

    from arithmech.report.views import findings
    c = pd.DataFrame({"id": ["a"], "claim": ["Heads exist"], "paper (LLaMA2-7B)": ["x"], "rule": ["r"], "here": ["h"],
                      "holds": [True]})
    toy = findings.answer_sentence("The embedded model", c, evidence=False)
    assert "checks of the machinery, not evidence" in toy and "picture" not in toy
    assert "embedded" in findings.NO_GROUND_TRUTH and "the paper's picture holds." in findings.answer_sentence("M", c)


def test_the_intro_sentence_names_the_claims_an_addition_only_run_decides_again(tmp_path):
    """Protects one claim from two unexplained verdicts (a review found the introduction's SmolLM2 sentence calling
    claims undecided that its appendix decides on addition alone): where a folder holds ``addition/``, the sentence
    adds each claim whose verdict that run changes, as fewshot.changed_lines computes it; where none changes, or
    elsewhere, nothing."""
    from pathlib import Path

    from arithmech.claims.evidence import Context
    from arithmech.report.views import fewshot, findings
    smol = Path(__file__).resolve().parents[4] / "results" / "smollm2-135m"
    changed = fewshot.changed_lines({"pooled": Context(smol), "addition alone": Context(smol / "addition")})
    line = findings.again_alone(Context(smol))
    said = " Decided again on a run of addition alone (its appendix's *Addition alone*): " + "; ".join(changed) + "."
    assert line == (said if changed else "")  # since knockout's 20 clusters, the shipped runs agree: ""
    assert findings.again_alone(Context(tmp_path)) == ""
