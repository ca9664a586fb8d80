"""Analyze and Beyond read one sample per question (``arithmech/steps/analyze.py``, issue #41 item 5): the prompts
of the operations identify pooled (those that pass its control), where the heads they study were ranked."""
from __future__ import annotations

from arithmech.analyze.config import Analyze
from arithmech.circuits.config import Beyond
from arithmech.data import pairs
from arithmech.steps import analyze as A
from arithmech.steps import beyond as B


def _sample(op: str, a: int) -> pairs.Sample:
    return pairs.Sample(clean=f"{a} ? 2 =", corrupt=f"{a} ? 3 =", answer="1", target="1", a=a, b=2, op=op,
                        template="t", family="f", answer_token="first")


def test_the_pooled_operations_alone_are_read(monkeypatch, tmp_path):
    """Protects item 5: with identify's control pooling addition and subtraction, analyze and beyond draw their
    prompts from those two only (before: every operation, multiplication and division included, whose control had
    failed); ``operations="all"`` keeps every operation; a key_heads.json without a control reads every one."""
    mixed = [_sample(op, a) for op in ("addition", "subtraction", "multiplication", "division") for a in range(1, 9)]
    monkeypatch.setattr(pairs, "samples", lambda folder: list(mixed))
    monkeypatch.setattr(A, "kept_prompts", lambda folder: list(mixed))
    control = {"control": {"pooled": ["addition", "subtraction"]}}
    monkeypatch.setattr(A.results, "read", lambda folder, name: control if name == "key_heads.json" else {})
    pooled = A.operations(Analyze(), tmp_path)
    assert pooled == ["addition", "subtraction"] and A.operations(Analyze(operations="all"), tmp_path) is None
    got = pairs.reference_samples(tmp_path, 100, 0, pooled)
    assert len(got) == 16 and {s.op for s in got} == {"addition", "subtraction"}
    assert len(pairs.reference_samples(tmp_path, 100, 0)) == 32                 # every operation, as before
    assert {s.op for s in pairs.reference_samples(tmp_path, 5, 0, pooled)} <= set(pooled)
    assert Beyond().operations == "pooled"
    _, _, drawn = B.inputs(tmp_path, 100, 0, pooled)
    assert len(drawn) == 16 and {s.op for s in drawn} == set(pooled)
    control["control"]["failed"] = {"addition": "floor", "subtraction": "floor"}
    assert A.operations(Analyze(), tmp_path) is None          # every pooled task fails: every operation, inconclusive
    control.clear()
    assert A.operations(Analyze(), tmp_path) is None


def test_the_result_read_back_is_what_the_run_wrote(tmp_path, embedded_model, monkeypatch):
    """Protects analyze's typed Result (issue #42): :func:`read` gives back the frames and the summary
    :func:`compute` computed and wrote (the roles, the studied heads' labels, the baseline, the MLP projections, the
    top numbers with the prompt they were read on), and the config it is read for; :func:`run` (the command's and
    ``ensure``'s) is ``compute`` then that Result (one return type for every step), and its summary prints what the
    command printed of the in-memory dict before (the labels, the stages as tuples, the verdicts, the folder)."""
    import pandas as pd

    from arithmech.methods.attention import verdict_lines
    from arithmech.steps import identify as I
    model, tok, _ = embedded_model
    res = I.identify(model, tok, "addition", n_samples=12, seed=0, knockout=False, transfer=False, prob=False)
    I.write_results(res, tmp_path / "embedded", model_name="embedded")
    config = Analyze(results=str(tmp_path), n_samples=6)
    out = A.compute(config)
    back = A.read(out["folder"], config)
    assert isinstance(back, A.Result) and back.config == config and back.summary == out["summary"]
    for name in ("roles", "labels", "baseline", "mlp"):
        pd.testing.assert_frame_equal(getattr(back, name), out[name], obj=name)
    pd.testing.assert_frame_equal(back.top, out["top"].assign(prompt=config.prompt))
    calls = []
    monkeypatch.setattr(A, "compute", lambda c: calls.append(c) or out)  # the files are there
    ran = A.run(config)
    assert calls == [config] and isinstance(ran, A.Result) and ran.config == config
    assert A.summary(ran).splitlines() == [  # the text of the in-memory dict's summary before issue #42
        *out["labels"][["name", "label", "operand", "operator", "rest"]].to_string(index=False).splitlines(),
        f"start-inflection-end: {out['stages']}",
        *verdict_lines(out["baseline"], heads_from=out["summary"]["heads_from"]),
        f"wrote {out['folder']}/attention_roles.csv, attention_baseline.csv, mlp_projection.csv, "
        "top_numbers.csv, analyze.json",
    ]
