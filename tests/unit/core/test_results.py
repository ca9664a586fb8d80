"""The results contract (arithmech.core.results): one folder per model, steps written as sets,
derived files that know their inputs, malformed files named, nothing overwritten silently."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from arithmech.core import records, result_files, results
from arithmech.core.atomic import sha256
from arithmech.core.safe_read import ResultsError


@pytest.fixture(autouse=True)
def no_holds_left():
    """Each test starts and ends without folder locks held by a check that never reached its write."""
    results.end_writes()
    yield
    results.end_writes()


def _identify_files(effect: float = -0.2) -> dict:
    return {"effects.csv": pd.DataFrame({"task": ["all", "all"], "layer": [0, 1], "head": ["1", "mlp"],
                                         "effect": [effect, 0.1], "effect_lo": [effect - 0.01, 0.05],
                                         "effect_hi": [effect + 0.01, 0.15]}),
            "key_heads.json": {"task": "all", "threshold": -0.05, "heads": [{"layer": 0, "head": 1}]},
            "knockout.csv": pd.DataFrame({"task": ["all"], "positions": ["end"], "kind": ["head"], "order": ["effect-rank"],
                                          "seed": [0], "k": [0], "accuracy": [1.0], "correct": [4], "n": [4],
                                          "ci_low": [0.51], "ci_high": [1.0], "mean_source": ["template 4"]}),
            "prompts.jsonl": [{"clean": "1 + 2 =", "corrupt": "1 @ 2 =", "answer": "3", "template": "t"}]}


def test_results_flag_names_the_root_or_the_model_folder(tmp_path):
    """Protects the README chain: `identify --out results/embedded` then `analyze --results results/embedded`
    use one folder (not results/embedded/embedded), and `--results results` means the same."""
    assert results.model_folder(tmp_path, "embedded") == tmp_path / "embedded"
    assert results.model_folder(tmp_path / "embedded", "embedded") == tmp_path / "embedded"
    results.write_step(tmp_path / "custom", "identify", _identify_files(), {"parameters": {}})
    assert results.model_folder(tmp_path / "custom", "embedded") == tmp_path / "custom"     # a folder with run.json
    with pytest.raises(ValueError, match="no results-folder name"):
        results.folder_name("/")


def test_write_step_is_a_set_with_a_manifest_and_leaves_no_temp(tmp_path):
    """Protects set writes: every file lands with its sha256 in run.json, no temporary folder is left,
    and other steps' records and files are kept."""
    f = tmp_path / "m"
    results.write_step(f, "identify", _identify_files(), {"parameters": {"seed": 0}}, model_name="m")
    results.write_step(f, "accuracy", {"accuracy_by_template.csv": pd.DataFrame(
        {"op": ["addition"], "template": ["t"], "n": [4], "accuracy": [0.5], "ci_low": [0.1], "ci_high": [0.9]})}, {})
    run = json.loads((f / "run.json").read_text())
    assert set(run["steps"]) == {"identify", "accuracy"} and run["model"] == "m"
    assert run["steps"]["identify"]["files"]["effects.csv"] == sha256(f / "effects.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]                         # no temp folder left
    assert results.read(f, "key_heads.json")["heads"] == [{"layer": 0, "head": 1}]
    assert list(results.read(f, "effects.csv")["head"]) == ["1", "mlp"]


def test_edited_or_incomplete_files_are_named(tmp_path):
    """Protects integrity: a file changed after its step wrote it, a truncated CSV and a file lacking a
    column are each refused with a message naming the file."""
    f = tmp_path / "m"
    results.write_step(f, "identify", _identify_files(), {})
    (f / "knockout.csv").write_text((f / "knockout.csv").read_text() + "all,end,head,random-rank,1,1,0.5,2,4,0.15,0.85,template 4\n")
    with pytest.raises(ResultsError, match="knockout.csv' differs from what identify wrote"):
        results.read(f, "knockout.csv")
    (f / "effects.csv").write_text("task,layer,head,effect,effect_lo,effect_hi\n")
    with pytest.raises(ResultsError, match="effects.csv' has no rows"):
        results.read(f, "effects.csv")
    (f / "key_heads.json").write_text('{"task": "all"}')
    with pytest.raises(ResultsError, match=r"key_heads.json' lacks \['heads'\]"):
        results.read(f, "key_heads.json")
    with pytest.raises(FileNotFoundError, match="python -m arithmech analyze"):
        results.read(f, "analyze.json")


def test_derived_files_are_refused_when_their_inputs_changed(tmp_path):
    """Protects against stale analyze files beside a re-run identify: analyze records the hash of the
    key heads it read, and a reader refuses its files once identify wrote other key heads."""
    f = tmp_path / "m"
    results.write_step(f, "identify", _identify_files(), {})
    roles = pd.DataFrame({c: [0.5] for c in result_files.FILES["attention_roles.csv"].required}).assign(role="A", task="all")
    results.write_step(f, "analyze", {"attention_roles.csv": roles, "analyze.json": {"key_heads": [], "stages": {}}}, {})
    assert len(results.read(f, "attention_roles.csv")) == 1
    files = _identify_files()
    files["key_heads.json"] = {"task": "all", "threshold": -0.05, "heads": [{"layer": 1, "head": 0}]}
    results.write_step(f, "identify", files, {})
    with pytest.raises(ResultsError, match="computed from another key_heads.json"):
        results.read(f, "attention_roles.csv")


def test_a_step_is_never_overwritten_without_asking(tmp_path):
    """Protects finished runs: check_writable refuses a step whose files exist (unless overwrite) and an
    existing file as a folder; fine-tune records likewise, and never a file of another format."""
    f = tmp_path / "m"
    results.check_writable(f, "identify")                                               # nothing there yet
    results.write_step(f, "identify", _identify_files(), {})
    with pytest.raises(ValueError, match="--overwrite"):
        results.check_writable(f, "identify")
    results.check_writable(f, "identify", overwrite=True)
    results.check_writable(f, "analyze")                                                # another step: fine
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is an existing file"):
        results.check_writable(tmp_path / "file", "identify")
    p = records.finetune_path(f, "full")
    p.parent.mkdir()
    p.write_text('{"before": {}, "after": {}}')
    with pytest.raises(ValueError, match="--overwrite"):
        records.check_finetune_writable(p)
    with pytest.raises(ValueError, match="not ours to replace"):
        records.check_finetune_writable(p, overwrite=True)


def test_a_folder_of_another_model_is_refused(tmp_path):
    """Protects one model per folder: --results naming a folder whose run.json belongs to another model is
    refused before any work (SmolLM2's files never land beside the embedded model's)."""
    results.write_step(tmp_path / "embedded", "identify", _identify_files(), {}, model_name="embedded")
    assert results.model_folder(tmp_path / "embedded", "embedded") == tmp_path / "embedded"
    with pytest.raises(ValueError, match="holds the results of model 'embedded', not 'smollm2-135m'"):
        results.model_folder(tmp_path / "embedded", "smollm2-135m")
    assert results.model_folder(tmp_path, "smollm2-135m") == tmp_path / "smollm2-135m"     # the root still works
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValueError, match="is an existing file"):
        results.check_writable(tmp_path / "afile" / "m", "identify")


@pytest.mark.parametrize("stop_at", [1, 2, 3])
def test_an_interrupted_set_is_the_old_set_or_the_new_one(tmp_path, monkeypatch, stop_at):
    """Protects set writes as one transaction: a write interrupted at its commit (move 1) leaves the old set; one
    interrupted after it (between two moves) is finished by the next reader, which then reads the new set whole,
    every file checked against the manifest; no stage is left behind either way. (The SIGKILL version of this is
    tests/faults/test_final_move.py.)"""
    f = tmp_path / "m"
    results.write_step(f, "identify", _identify_files(-0.2), {})
    moves = []
    real = results.os.replace

    def stop(a, b):
        moves.append(b)
        if len(moves) == stop_at:
            raise KeyboardInterrupt
        real(a, b)
    monkeypatch.setattr(results.os, "replace", stop)
    with pytest.raises(KeyboardInterrupt):
        results.write_step(f, "identify", _identify_files(-0.3), {})
    monkeypatch.undo()
    got = results.read_step(f, "identify")
    assert got["effects"]["effect"][0] == (-0.2 if stop_at == 1 else -0.3)
    assert set(got) == {"effects", "key_heads", "knockout", "prompts"}
    assert not list(f.glob(".pending-*"))


def test_finetune_record_refused_after_its_ranking_changed(tmp_path):
    """Protects fine-tune records' provenance: a precise-SFT record stores the hashes of the ranking it
    tuned, and reading it after identify wrote another ranking is refused."""
    f = tmp_path / "m"
    results.write_step(f, "identify", _identify_files(-0.2), {})
    rec = records.finetune_record(model="m", mode="precise", results={"x": records.measure(0.5)})
    records.write_finetune(f, rec, inputs=("key_heads.json", "effects.csv"))
    assert records.read_finetune(f, "precise")["inputs"]["effects.csv"] == sha256(f / "effects.csv")
    results.write_step(f, "identify", _identify_files(-0.4), {})
    with pytest.raises(ResultsError, match="computed from another effects.csv"):
        records.read_finetune(f, "precise")


def test_an_effects_csv_of_an_older_format_is_refused(tmp_path):
    """Protects the format bump of effects.csv (v2: effect_lo, effect_hi): run.json records each file's
    format; a file recorded as another version (or written before formats were recorded: version 1) is
    refused with the command to re-run, while the step's other files still read."""
    f = tmp_path / "m"
    results.write_step(f, "identify", _identify_files(), {"parameters": {}})
    run = json.loads((f / "run.json").read_text())
    assert run["steps"]["identify"]["formats"]["effects.csv"] == result_files.FILES["effects.csv"].version == 2
    assert len(results.read(f, "effects.csv")) == 2
    del run["steps"]["identify"]["formats"]
    (f / "run.json").write_text(json.dumps(run))
    with pytest.raises(ResultsError, match="effects.csv' is format version 1 .* reads version 2.*identify --overwrite"):
        results.read(f, "effects.csv")
    assert results.read(f, "key_heads.json")["task"] == "all"


def test_results_name_keeps_the_whole_last_part():
    """Protects: one results folder per model, named after the alias, the hub id's or folder's last
    part (dots kept: Qwen2.5-0.5B is not Qwen2) or the .gguf file's name."""
    from pathlib import Path

    from arithmech.core.results import folder_name
    assert folder_name("embedded") == "embedded"
    assert folder_name("Qwen/Qwen2.5-0.5B") == "Qwen2.5-0.5B"
    assert folder_name("/models/Llama-2-7b-hf/") == "Llama-2-7b-hf"
    assert folder_name("/tmp/SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct.Q4_1"
    assert folder_name(".") == Path.cwd().name                       # `--model .`: the folder's own name


def _accuracy() -> dict:
    return {"accuracy_by_template.csv": pd.DataFrame({"op": ["addition"], "template": ["t"], "n": [4], "accuracy": [0.5],
                                                      "ci_low": [0.1], "ci_high": [0.9]})}


def test_a_set_finished_meanwhile_is_not_replaced_at_the_final_move(tmp_path):
    """Protects "whichever run ends first": a run checked into a folder not made yet (no lock to take then) that
    finds, at its final move, a set of its step written meanwhile refuses under the lock and leaves that set's
    bytes as they were; with --overwrite it replaces it."""
    folder = tmp_path / "new" / "m"
    results.check_writable(folder, "accuracy", overwrite=False)
    results.write_step(tmp_path / "other", "accuracy", _accuracy(), {})          # the other run, finished first
    folder.parent.mkdir()
    (tmp_path / "other").rename(folder)
    before = (folder / "accuracy_by_template.csv").read_bytes()
    with pytest.raises(ValueError, match="already holds accuracy results.*--overwrite"):
        results.write_step(folder, "accuracy", _accuracy(), {"parameters": {"seed": 1}})
    assert (folder / "accuracy_by_template.csv").read_bytes() == before and not results._WRITING
    results.check_writable(folder, "accuracy", overwrite=True)
    results.write_step(folder, "accuracy", _accuracy(), {"parameters": {"seed": 1}})
    assert results.read_run(folder)["steps"]["accuracy"]["parameters"] == {"seed": 1}


def test_a_folder_another_process_writes_is_refused_by_check_and_write(tmp_path):
    """Protects one writer per folder through the results module: while another process holds the folder's
    lock (a step between its check and its write), check_writable and write_step refuse in one line naming the
    folder, and nothing is written."""
    import subprocess
    import sys
    folder = tmp_path / "m"
    code = ("import sys, time; from arithmech.core import results; results.check_writable(sys.argv[1], 'identify');"
            "print('held', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "held"
        for attempt in (lambda: results.check_writable(folder, "accuracy"), lambda: results.write_step(folder, "accuracy", _accuracy(), {})):
            with pytest.raises(ValueError, match=f"'{folder}' is being written by another run") as e:
                attempt()
            assert "\n" not in str(e.value)
        assert list(folder.iterdir()) == [] and not results._WRITING
    finally:
        p.kill()
        p.wait()


def test_run_json_naming_an_input_outside_the_folder_is_refused_before_it_is_opened(tmp_path):
    """Protects recorded paths: a run.json whose recorded inputs name a file outside the folder (here a FIFO,
    which would hang a reader) is refused by made_with naming run.json, without opening that file."""
    import os
    f = tmp_path / "m"
    results.write_step(f, "identify", _identify_files(), {"parameters": {"seed": 0}})
    os.mkfifo(tmp_path / "pipe")
    run = json.loads((f / "run.json").read_text())
    run["steps"]["identify"]["inputs"] = {"../pipe": "0" * 64}
    (f / "run.json").write_text(json.dumps(run))
    with pytest.raises(ResultsError, match=r"run.json' records the input '../pipe', a path outside"):
        results.made_with(f, "identify", {"seed": 0})


def test_a_step_of_an_older_file_format_is_not_reused(tmp_path):
    """Protects the reuse check against format bumps: a step whose record names a file of another format
    version than this arithmech reads (upstream.csv v1 after v2) is made again by the chapters' ``ensure``
    (made_with is False), instead of being reused and then refused by :func:`read` mid-chapter."""
    f = tmp_path / "m"
    results.write_step(f, "identify", _identify_files(), {"parameters": {"seed": 0}})
    assert results.made_with(f, "identify", {"seed": 0})
    run = json.loads((f / "run.json").read_text())
    run["steps"]["identify"]["formats"]["effects.csv"] = result_files.FILES["effects.csv"].version - 1
    (f / "run.json").write_text(json.dumps(run))
    assert not results.made_with(f, "identify", {"seed": 0})


def test_every_step_with_files_names_its_command():
    """Protects the error messages that tell a reader what to re-run: every step that owns a file of the results
    folder has its command in WRITTEN_BY (a missing one turned "re-run …" into a KeyError for shots.csv)."""
    assert {spec.step for spec in result_files.FILES.values()} <= set(result_files.WRITTEN_BY)
