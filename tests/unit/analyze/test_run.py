"""Analyze's step (``arithmech/analyze/run.py``): what it computes in memory, the files it writes read back as its
typed Result, and the command's summary of them."""
from __future__ import annotations

import json

from arithmech.analyze import run as analyze_run
from arithmech.analyze.config import Analyze


def test_the_result_read_back_is_what_the_run_wrote(tmp_path, embedded_model, monkeypatch):
    """Protects analyze's typed Result: :func:`read` gives back the frames :func:`compute` computed and wrote (the
    roles, the studied heads' labels, the MLP projections, the top numbers with the prompt they were read on), the
    stages it found, and the config it is read for; :func:`run` (the command's and ``ensure``'s) is ``compute`` then
    that Result (one return type for every step), and its summary prints the labels, the stages as tuples, the
    verdicts and the folder."""
    import pandas as pd

    from arithmech.identify import run as identify_run
    from arithmech.methods.attention import verdict_lines
    model, tok, _ = embedded_model
    res = identify_run.identify(model, tok, "addition", n_samples=12, seed=0, knockout=False, transfer=False, prob=False)
    identify_run.write_results(res, tmp_path / "embedded", model_name="embedded")
    config = Analyze(results=str(tmp_path), n_samples=6)
    out = analyze_run.compute(config)
    back = analyze_run.read(out.folder, config)
    assert isinstance(out, analyze_run.Computed) and len(out.samples) == back.summary["n_samples"]
    assert isinstance(back, analyze_run.Result) and back.config == config and back.stages == out.stages
    for name in ("roles", "labels", "mlp"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(out, name), obj=name)
    pd.testing.assert_frame_equal(back.top, out.top.assign(prompt=config.prompt))
    assert set(back.baseline.name) == set(out.labels.name)
    # the answer- and operand-specific knots with their intervals (analyze.json's specific_stages): the stage fit on
    # the same samples' curves, each minus its matched baseline (by hand here), resampled over their problem clusters
    from arithmech.data.splits import cluster
    from arithmech.methods import stages
    from arithmech.methods.mlp import projection_samples
    per = projection_samples(model, tok, out.samples)  # (n, L, 8): in_A in_B in_C diff_A diff_B diff_C diff_other in_other
    curves = {"answer": per[..., 5] - per[..., 6], "operands": (per[..., 0] + per[..., 1]) / 2 - per[..., 7]}
    want = stages.stage_intervals(curves, [cluster(x) for x in out.samples], seed=config.seed)
    assert back.specific_stages == json.loads(json.dumps(want)) and want["clusters"] >= 2
    assert want["answer"]["knots"] == stages.knots(curves["answer"].mean(0)[None])[0].tolist()
    calls = []
    monkeypatch.setattr(analyze_run, "compute", lambda c: calls.append(c) or out)  # the files are there
    ran = analyze_run.run(config)
    assert calls == [config] and isinstance(ran, analyze_run.Result) and ran.config == config
    # printed from the frame read back (equal to the in-memory one within float precision, above: a float32 value
    # and its CSV round trip can print differently in the 7th digit)
    assert analyze_run.summary(ran).splitlines() == [
        *back.labels[["name", "label", "operand", "operator", "rest"]].to_string(index=False).splitlines(),
        f"start-inflection-end: {out.stages}",
        *verdict_lines(back.baseline, heads_from=back.summary["heads_from"]),
        f"wrote {out.folder}/attention_roles.csv, attention_baseline.csv, mlp_projection.csv, "
        "top_numbers.csv, analyze.json",
    ]
