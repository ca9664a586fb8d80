"""The chapter configs hand each step its config whole: ``to_<step>()`` builds what the
pages built field by field before, and :func:`narrow` copies the fields a chapter shares with a step by name."""
from __future__ import annotations

import pytest

from arithmech.analyze import config as analyze_config
from arithmech.circuits import config as circuits_config
from arithmech.identify import config as identify_config
from arithmech.identify.config import BOOK_SCALE
from arithmech.prompts import config as prompts_config
from arithmech.report.build import chapters
from arithmech.steps import config_training

COMMON = dict(results="results", seed=0, device="cpu", dtype="float32")


def test_narrow_copies_shared_fields_skips_and_overrides():
    """Protects the one copying rule: every field the chapter and the step share by name reaches the step, a
    skipped name keeps the step's default, a change wins over the chapter's value, and a chapter-only field
    (``stability_seeds``) reaches nothing."""
    P = chapters.Identify(n_samples=32, seed=5, results="elsewhere")
    got = chapters.narrow(identify_config.Identify, P, skip=("seed",), threshold=-0.2)
    assert (got.n_samples, got.results, got.seed, got.threshold) == (32, "elsewhere", 0, -0.2)
    assert chapters.narrow(identify_config.Stability, P).seeds == identify_config.Stability().seeds


def test_chapter_configs_build_the_step_configs_the_pages_built_by_hand():
    """Protects the pages' content across the move of config building into the chapters: at every chapter's
    defaults, each ``to_<step>()`` equals the step config its page built field by field before (pinned here as
    it was written there), including the names a chapter uses for another thing (Beyond's ``n_samples`` is not
    faithfulness's, Table 1's ``scale`` is not the chapter's, the SmolLM2 accuracy table's ``n_per_template`` is
    not the shots step's)."""
    i, a, b, e = chapters.Identify(), chapters.Analyze(), chapters.Beyond(), chapters.Explorer()
    assert i.to_identify() == identify_config.Identify(model_name="embedded", task="all", n_samples=256, threshold=-0.05,
                                         answer_token="last-digit", overwrite=True, **COMMON)
    assert i.to_stability() == identify_config.Stability(model_name="embedded", task="addition", seeds=3,
                                           sizes=(64, 128, 256, 512), threshold=-0.05, **COMMON)
    assert a.to_analyze() == analyze_config.Analyze(model_name="embedded", n_samples=256, prompt="4 + 3 =", overwrite=True,
                                       **COMMON)
    for m in ("embedded", "smollm2-135m"):
        assert b.to_beyond(m) == circuits_config.Beyond(model_name=m, receivers=5, ig_steps=8, n_samples=128, **COMMON)
        assert b.to_faithfulness(m) == circuits_config.Faithfulness(model_name=m, **COMMON)
        assert b.to_identify(m) == identify_config.Identify(model_name=m, n_samples=512, **BOOK_SCALE, **COMMON)
        assert e.to_identify(m) == identify_config.Identify(model_name=m, n_samples=512, answer_token="last-digit", **BOOK_SCALE,
                                              **COMMON)
    assert chapters.Data().to_shots() == prompts_config.Shots(model_name="embedded", seed=0, device="cpu", dtype="float32",
                                          n_per_template=4)
    assert chapters.Finetune().to_table1() == config_training.Table1(model_name="embedded", suite="toy", top_k=8, seeds=(0,), draws=1,
                                                frontier_seeds=1, steps=30, curve_steps=300, batch_size=32,
                                                max_extend=1, overwrite=True, **COMMON)
    assert chapters.MlpAblation().to_finetune(2) == config_training.Finetune(
        model_name="embedded", train_data="embedded", n_train=4096,
        benchmarks=("two_digit", "negative", "single_digit", "generic"), max_steps=60, lr=5e-4, batch_size=32,
        micro_batch_size=32, warmup=0.02, weight_decay=0.1, threads=1, overwrite=True, mode="precise",
        heads="top-8", mlps=2, tag="top8-mlp2", **COMMON)
    assert chapters.Gsm8k().to_generalize() == circuits_config.Generalize(n_samples=256, seed=0, threshold=-0.05, top=5)


def test_smollm2_appendix_configs_are_the_ones_its_page_built():
    """Protects the SmolLM2 appendix's reuse of its shipped files: its shots, identify (K-shot and zero-shot),
    stability, analyze and accuracy configs are the ones the page built from ``_common()`` before."""
    P = chapters.SmolLM2()
    common = dict(model_name="smollm2-135m", **COMMON)
    assert P.to_shots() == prompts_config.Shots(**common, example_sets=16)
    k_shot = identify_config.Identify(**common, n_samples=4096, shots=4, example_sets=16, knockout_split="held-out",
                        bootstrap="cluster", **{**BOOK_SCALE, "knockout_samples": 128}, n_random=20)
    assert P.to_identify(4) == k_shot
    assert P.to_identify(0, out="x/zero-shot") == k_shot.replace(shots=0, out="x/zero-shot")
    assert P.to_stability(4) == identify_config.Stability(**common, task="addition", seeds=3, sizes=(64, 128, 256), shots=4,
                                            example_sets=16, bootstrap="cluster")
    assert P.to_analyze() == analyze_config.Analyze(**common, n_samples=4096, prompt="4 + 3 = ")
    assert P.to_accuracy() == prompts_config.Accuracy(**common, n_per_template=16)


@pytest.mark.parametrize("chapter", sorted(chapters.CHAPTERS))
def test_a_chapter_parameter_that_sets_a_step_field_has_its_name(chapter):
    """Protects the naming rule: no chapter declares ``model`` or ``results_dir`` (the step configs' fields are
    ``model_name`` and ``results``; ``--set model_name=…`` reaches every chapter that has it)."""
    names = set(chapters.CHAPTERS[chapter].__dataclass_fields__)
    assert not names & {"model", "results_dir", "random_orders"}, chapter
