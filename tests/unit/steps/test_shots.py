"""The rule that picks the number of solved examples reads the yield only (arithmech.steps.shots.choose)."""
from __future__ import annotations

import pandas as pd

from arithmech.core.stats import wilson_interval
from arithmech.steps import shots


def table(kept: dict[int, dict[str, int]], drawn: int = 100) -> pd.DataFrame:
    rows = []
    for k, by_op in kept.items():
        for op, n in by_op.items():
            lo, hi = wilson_interval(n, drawn)
            rows.append({"shots": k, "op": op, "drawn": drawn, "kept": n, "kept_rate": n / drawn, "kept_lo": lo,
                         "kept_hi": hi})
    return pd.DataFrame(rows)


def test_the_weakest_operation_decides():
    """Protects: K is judged by its weakest operation, not by the average (identify needs every operation)."""
    t = table({0: {"addition": 60, "division": 5}, 4: {"addition": 40, "division": 30}})
    c = shots.choose(t)
    assert c["shots"] == 4 and c["floors"][0]["op"] == "division" and c["best_floor"] == 0.30


def test_ties_go_to_the_fewest_examples():
    """Protects: a K whose weakest operation cannot be told apart from the best (its Wilson upper bound
    reaches the best point estimate) wins when it has fewer examples."""
    t = table({0: {"addition": 30, "division": 27}, 2: {"addition": 30, "division": 31}, 4: {"addition": 50, "division": 28}})
    c = shots.choose(t)
    assert c["tied"] == [0, 2, 4] and c["shots"] == 0


def test_can_do_needs_the_lower_bound_above_five_percent():
    """Protects: an operation the model 'can do' keeps at least 5% of its draws by the Wilson lower bound."""
    t = table({0: {"addition": 20, "division": 3}})
    assert shots.choose(t)["can_do"][0] == ["addition"]


def test_validation_seed_is_not_identify_seed():
    """Protects: K is chosen on a draw of its own, never on the pairs identify patches with the same seed."""
    assert all(shots.validation_seed(s) != s for s in range(50))
    assert shots.validation_seed(0) == shots.validation_seed(0)


def test_the_result_read_back_is_the_table_the_run_wrote_and_its_choice(tmp_path):
    """Protects the step's typed Result: ``shots.csv`` written as :func:`run` writes it is read back
    unchanged, with :func:`choose`'s choice on it as fields and the config it is read for."""
    from arithmech.core import results
    from arithmech.prompts.config import Shots
    t = table({0: {"addition": 30, "division": 2}, 2: {"addition": 40, "division": 31}}).assign(
        token_correct=50, correct=45, xc_valid=40)
    config = Shots(results=str(tmp_path), grid=(0, 2))
    folder = results.model_folder(tmp_path, "embedded")
    results.write_step(folder, "shots", {"shots.csv": t}, {"parameters": shots.recorded(config), "choice": shots.choose(t)})
    back = shots.read(folder, config)
    assert isinstance(back, shots.Result) and back.config == config
    pd.testing.assert_frame_equal(back.table, t)           # (the csv keeps 10 significant digits)
    choice = shots.choose(results.read(folder, "shots.csv"))      # the rule on the table as the file holds it
    assert {k: getattr(back, k) for k in choice} == choice and back.shots == shots.choose(t)["shots"] == 2
    assert "chosen: shots = 2" in shots.summary(back)
