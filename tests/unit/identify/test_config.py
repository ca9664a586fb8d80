"""The step configs (each wing's config: arithmech.identify.config, ...): every default once, every value checked, the CLI generated."""
from __future__ import annotations

import dataclasses

import pytest

from arithmech.cli import COMMANDS, build_parser
from arithmech.core.config import fields, flag
from arithmech.core.inputs import KNOCKOUT_POSITIONS
from arithmech.identify import config as identify_config
from arithmech.methods.ablation.settings import split_positions
from arithmech.methods.patching import METHODS


def test_choices_restated_without_torch_equal_their_sources():
    """Protects one set of choices: the configs import no torch, so a few choices are restated beside them;
    they must equal the implementations' own (patching's methods, the knockout's positions)."""
    assert identify_config.Identify.__dataclass_fields__["method"].metadata["choices"] == METHODS
    for p in KNOCKOUT_POSITIONS:
        split_positions(p)                                     # every offered choice is one the knockout takes
    with pytest.raises(ValueError):
        split_positions("nowhere")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_exactly_its_config_fields_as_flags(name):
    """Protects the generated CLI: ``python -m arithmech NAME --help`` lists exactly the fields of the command's
    config, each as ``--field-name`` with the field's default (no flag renamed on the way down)."""
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[name]
    dests = {a.dest: a for a in sub._actions if a.dest != "help"}
    cls = COMMANDS[name].config
    assert set(dests) == {f.name for f in dataclasses.fields(cls)}
    for field_name, default, *_ in fields(cls):
        assert flag(field_name) in dests[field_name].option_strings
        assert dests[field_name].default == default


def test_a_config_refuses_bad_values_in_one_line_and_converts_lists():
    """Protects the checks every entry point shares: a wrong type, a value out of bounds or outside the choices
    is one ValueError naming the flag; lists become tuples (configs are frozen and hashable)."""
    for bad, match in [(dict(n_samples=0), "--n-samples 0 is below 1"), (dict(n_samples="8"), "--n-samples '8'"),
                       (dict(threshold=0.1), "--threshold 0.1 is above"), (dict(answer_token="x"), "--answer-token 'x'"),
                       (dict(knockout=1), "--knockout 1: expected true or false"), (dict(ks=[0]), "--ks 0 is below 1")]:
        with pytest.raises(ValueError, match=match):
            identify_config.Identify(**bad)
    c = identify_config.Stability(sizes=[64, 128])
    assert c.sizes == (64, 128) and hash(c)
    assert identify_config.Identify(n_samples=7).reuse_key()["n_samples"] == 7 and "batch_size" not in identify_config.Identify().reuse_key()


@pytest.mark.parametrize("argv,flag_text", [
    (["identify", "--n-samples", "1000000000000"], "--n-samples 1000000000000 is above 50000"),
    (["identify", "--knockout-samples", "1000000000000"], "--knockout-samples 1000000000000 is above 50000"),
    (["identify", "--n-boot", "1000000000000"], "--n-boot 1000000000000 is above 20000"),
    (["beyond", "--ig-steps", "1000000000"], "--ig-steps 1000000000 is above 256"),
    (["identify", "--seed", "100000000000000000000000"], "--seed 100000000000000000000000 is above 4294967295"),
    (["analyze", "--prompt", "4 + 3 = " * 15_000], "--prompt has 120,000 characters; at most 2,000"),
    (["table1", "--seeds", ",".join(map(str, range(30)))], "--seeds: 30 seeds; at most 20")])
def test_sizes_beyond_their_bound_are_refused_in_one_line(argv, flag_text, capsys):
    """Protects the bounds stated beside each default (the wings' configs): a size that no run on
    this machine could finish is one line naming the flag and the bound, exit 2, before any model loads."""
    from arithmech.cli import main
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("error: ") and flag_text in err
