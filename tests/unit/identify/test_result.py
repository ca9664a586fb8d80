"""What later steps read of identify's files (``arithmech/identify/result.py``): the prompts of
the operations identify pooled (those that pass its control), where the heads they study were ranked."""
from __future__ import annotations

from arithmech.analyze.config import Analyze
from arithmech.circuits.config import Beyond
from arithmech.data import pairs
from arithmech.identify import result


def _sample(op: str, a: int) -> pairs.Sample:
    return pairs.Sample(clean=f"{a} ? 2 =", corrupt=f"{a} ? 3 =", answer="1", target="1", a=a, b=2, op=op,
                        template="t", family="f", answer_token="first")


def test_the_pooled_operations_alone_are_read(monkeypatch, tmp_path):
    """Protects the operations later steps read: with identify's control pooling addition and subtraction, analyze
    and beyond draw their prompts from those two only (before: every operation, multiplication and division
    included, whose control had failed); ``operations="all"`` keeps every operation; a key_heads.json without a
    control reads every one."""
    mixed = [_sample(op, a) for op in ("addition", "subtraction", "multiplication", "division") for a in range(1, 9)]
    monkeypatch.setattr(pairs, "samples", lambda folder: list(mixed))
    control = {"control": {"pooled": ["addition", "subtraction"]}}
    files = {"key_heads.json": control, "prompts.jsonl": [s.to_json() for s in mixed]}
    monkeypatch.setattr(result.results, "read", lambda folder, name: files.get(name, {}))
    pooled = result.operations(Analyze().operations, tmp_path)
    assert pooled == ["addition", "subtraction"] and result.operations("all", tmp_path) is None
    got = pairs.reference_samples(tmp_path, 100, 0, pooled)
    assert len(got) == 16 and {s.op for s in got} == {"addition", "subtraction"}
    assert len(pairs.reference_samples(tmp_path, 100, 0)) == 32                 # every operation, as before
    assert {s.op for s in pairs.reference_samples(tmp_path, 5, 0, pooled)} <= set(pooled)
    assert Beyond().operations == "pooled"
    _, _, drawn = result.ranked_inputs(tmp_path, 100, 0, pooled)   # what beyond reads
    assert len(drawn) == 16 and {s.op for s in drawn} == set(pooled)
    control["control"]["failed"] = {"addition": "floor", "subtraction": "floor"}
    assert result.operations(Analyze().operations, tmp_path) is None          # every pooled task fails: every operation, inconclusive
    control.clear()
    assert result.operations(Analyze().operations, tmp_path) is None
