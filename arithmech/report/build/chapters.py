"""Each chapter's parameters as a config (:mod:`arithmech.core.config`): the rules its values must follow.

A chapter's ``parameters`` cell holds its defaults (papermill reads and overrides them there); the cell after
it builds the chapter's config from them, ``P = chapters.check("identify", globals())``, which refuses a
wrong value in one line naming the parameter. The book runner checks ``--set`` values the same way, by building
the config (:func:`arithmech.report.build.plan.plan`), before any chapter runs. A test keeps each parameters
cell's defaults equal to its config's.

A chapter parameter that sets a step's field has the field's name; each config's ``to_<step>()`` builds the step
config its page runs with (:func:`narrow` copies the shared fields by name). A chapter's own defaults are its scale
for the book (e.g. 512 pairs for SmolLM2); the steps' defaults are in each wing's ``config``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar

from arithmech.accounts.config import Chapter as Accounts
from arithmech.analyze import config as analyze_config
from arithmech.circuits import config as circuits_config
from arithmech.core.config import Config, option
from arithmech.core.inputs import ANSWER_TOKENS, DTYPES, check_device, check_model
from arithmech.identify import config as identify_config
from arithmech.pipeline.config_base import MAX_SHOTS
from arithmech.planted.config import Chapter as Planted
from arithmech.prompts import config as prompts_config
from arithmech.steps import config_training as training

S = TypeVar("S", bound=Config)


def step_default(config: type[Config], name: str):
    """The default of field ``name`` of step config ``config``: a chapter parameter that means the same takes
    it from there, so the chapter and the command cannot disagree."""
    return config.__dataclass_fields__[name].default


def narrow(step: type[S], chapter: Config, skip: tuple[str, ...] = (), **changes) -> S:
    """Step config ``step`` from ``chapter``: every field the two share by name (a chapter parameter is named as the
    step field it sets), less ``skip`` (a chapter name that means another thing there), with ``changes`` over them."""
    given = {f.name: getattr(chapter, f.name) for f in fields(chapter) if f.name not in skip}
    return step(**{f.name: given[f.name] for f in fields(step) if f.name in given} | changes)


def book_scale(chapter: Config) -> dict:
    """:data:`arithmech.identify.config.BOOK_SCALE` less the fields ``chapter`` sets itself (the SmolLM2 appendix's
    ``knockout_samples``): identify at the book's scale."""
    return {k: v for k, v in identify_config.BOOK_SCALE.items() if k not in chapter.__dataclass_fields__}


def stability(chapter: Identify | SmolLM2, **changes) -> identify_config.Stability:
    """Key-head stability on addition: the chapter's ``stability_seeds`` and ``stability_sizes`` are the step's
    ``seeds`` and ``sizes``."""
    sizes: dict[str, Any] = {"seeds": chapter.stability_seeds, "sizes": chapter.stability_sizes}
    return narrow(identify_config.Stability, chapter, task="addition", **sizes, **changes)


@dataclass(frozen=True)
class Chapter(Config):
    """Base of the chapter configs: a value is named as the parameter it is (``parameter n_samples=…``)."""

    @classmethod
    def label(cls, name: str) -> str:
        return f"parameter {name}="

    @classmethod
    def pick(cls, namespace: dict) -> Chapter:
        """The config from the chapter's variables (``globals()`` of the notebook): every field by name."""
        return cls(**{f: namespace[f] for f in cls.__dataclass_fields__ if f in namespace})


MODEL = "embedded, smollm2-135m, a model folder, a .gguf file or a hub id"
OPERATIONS = ("addition", "subtraction", "multiplication", "division")


@dataclass(frozen=True)
class ModelChapter(Chapter):
    """A chapter about one model."""

    model_name: str = option("embedded", MODEL)
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the model runs: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the model's weights", choices=DTYPES)

    def check(self) -> None:
        check_model(self.model_name)
        check_device(self.device)


@dataclass(frozen=True)
class Data(ModelChapter):
    n_per_template: int = option(10, "pairs drawn per template for the accuracy chart", low=1)
    answer_token: str = option(
        step_default(identify_config.Identify, "answer_token"),
        "the answer token scored (identify's rule)",
        choices=ANSWER_TOKENS,
    )
    yield_per_template: int = option(
        4,
        "the yield of solved examples on the chapter's model: prompts per template "
        "and K (the book's scale; the shots command's default is larger)",
        low=1,
    )

    def to_shots(self) -> prompts_config.Shots:
        """The yield on the chapter's model (the shots step scores identify's default answer token)."""
        return narrow(prompts_config.Shots, self, skip=("answer_token",), n_per_template=self.yield_per_template)


@dataclass(frozen=True)
class Identify(ModelChapter):
    task: str = option(
        step_default(identify_config.Identify, "task"),
        "all (those of the four operations that pass the control, pooled), one of them, fig8, fig10 or a "
        "template-pair file",
    )
    n_samples: int = option(
        step_default(identify_config.Identify, "n_samples"),
        "pairs drawn per task; X_r keeps those the model answers right",
        low=1,
    )
    threshold: float = option(
        step_default(identify_config.Identify, "threshold"),
        "key heads: relative logit change below this, whole 95% interval",
        high=-1e-9,
    )
    answer_token: str = option(
        step_default(identify_config.Identify, "answer_token"), "the measured answer token", choices=ANSWER_TOKENS
    )
    stability_seeds: int = option(
        step_default(identify_config.Stability, "seeds"), "key-head stability: independent draws", low=2
    )
    stability_sizes: tuple[int, ...] = option(
        step_default(identify_config.Stability, "sizes"), "pairs drawn per stability run", low=1
    )
    results: str = option("results", "files go to <results>/<model-name>/")
    trained_without_heldout: bool = option(
        True,
        "the model was trained without arithmech.data.heldout's pairs "
        "(the embedded model): compare its top components on trained and held-out facts",
    )

    def to_identify(self) -> identify_config.Identify:
        """Identify on the chapter's parameters, rewriting its files (a chapter re-computes its own run)."""
        return narrow(identify_config.Identify, self, overwrite=True)

    def to_stability(self) -> identify_config.Stability:
        return stability(self)


@dataclass(frozen=True)
class Analyze(ModelChapter):
    results: str = option("results", "reads identify's files from and writes to <results>/<model-name>/")
    n_samples: int = option(
        step_default(analyze_config.Analyze, "n_samples"),
        "reference samples (X_r) the averages run over (paper: 1000)",
        low=1,
    )
    prompt: str = option(step_default(analyze_config.Analyze, "prompt"), "the prompt of Fig. 6c and of the explorer")
    counterfactual: str = option("4 @ 3 =", "its counterfactual in the explorer ('' for none)")
    interactive: bool = option(False, "True in a live Jupyter session: show the ipywidgets prompt explorer")

    def to_analyze(self) -> analyze_config.Analyze:
        """Analyze on the chapter's parameters, rewriting its files."""
        return narrow(analyze_config.Analyze, self, overwrite=True)


@dataclass(frozen=True)
class Models(Chapter):
    """A chapter that shows several models with one code path."""

    models: tuple[str, ...] = option(("embedded", "smollm2-135m"), "every model the page shows")
    results: str = option("results", "reads identify's files from <results>/<model-name>/")
    identify_samples: int = option(512, "pairs per operation when a model's identify files are missing", low=8)
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the models run: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the models' weights", choices=DTYPES)

    def check(self) -> None:
        for m in self.models:
            check_model(m)
        check_device(self.device)

    def to_identify(self, model_name: str) -> identify_config.Identify:
        """Identify of ``model_name`` at ``identify_samples`` pairs and the book's scale (where its files are
        missing)."""
        return narrow(
            identify_config.Identify, self, model_name=model_name, n_samples=self.identify_samples, **book_scale(self)
        )


@dataclass(frozen=True)
class Explorer(Models):
    n_prompts: int = option(144, "prompts drawn round-robin over the templates of Fig. 8 and Fig. 10", low=1)
    thresholds: tuple[float, ...] = option(
        (-0.1, -0.05, -0.02, -0.01, -0.005, -0.002), "the slider's key-head thresholds, strict to loose", high=-1e-9
    )
    max_heads: int = option(
        12,
        "attention is precomputed for every head a step knocks out and for these (most negative effect first)",
        low=1,
    )
    n_reference: int = option(128, "identify samples whose counterfactuals give the knockout means", low=1)
    answer_token: str = option(
        step_default(identify_config.Identify, "answer_token"),
        "the answer token the prompts are drawn and scored with (identify's rule)",
        choices=ANSWER_TOKENS,
    )

    def check(self) -> None:
        super().check()
        if list(self.thresholds) != sorted(set(self.thresholds)):
            raise ValueError(
                f"parameter thresholds={list(self.thresholds)}: expected strictly increasing values (strict to loose)"
            )


@dataclass(frozen=True)
class Beyond(Models):
    receivers: int = option(
        step_default(circuits_config.Beyond, "receivers"),
        "receivers: key heads, or the top k by effect if none passes",
        low=1,
    )
    ig_steps: int = option(
        step_default(circuits_config.Beyond, "ig_steps"), "EAP-IG: points on the straight path from X_r to X_c", low=1
    )
    n_samples: int = option(
        step_default(circuits_config.Beyond, "n_samples"),
        "reference samples (X_r) from identify's prompts.jsonl",
        low=1,
    )
    recompute: bool = option(False, "recompute eap.csv / upstream.csv even when made with these parameters")

    def to_beyond(self, model_name: str) -> circuits_config.Beyond:
        return narrow(circuits_config.Beyond, self, model_name=model_name)

    def to_faithfulness(self, model_name: str) -> circuits_config.Faithfulness:
        """Faithfulness at its own defaults (its ``n_samples`` counts fresh evaluation pairs, not Beyond's X_r)."""
        return narrow(circuits_config.Faithfulness, self, skip=("n_samples",), model_name=model_name)


@dataclass(frozen=True)
class Finetune(ModelChapter):
    results: str = option("results", "reads identify's ranking, writes <results>/<model-name>/finetune/")
    suite: str = option(
        "toy", "toy: the embedded model's skills; cpu or paper: a real model", choices=("toy", "cpu", "paper")
    )
    top_k: int = option(8, "heads tuned by precise SFT", low=1)
    seeds: tuple[int, ...] = option((0,), "training seeds of every arm at every rate", low=0)
    draws: int = option(1, "random-head draws at each rate of each random arm", low=1)
    frontier_seeds: int = option(1, "seeds at the rates on each arm's validation frontier", low=1)
    steps: int = option(30, "optimizer steps per run at scale 1", low=1)
    batch_size: int = option(32, "rows per optimizer step", low=1)
    curve_steps: int = option(300, "full SFT's learning curve: steps, scored every 20", low=20)
    max_extend: int = option(1, "grid extensions (full's, the precise arms') until each grid is bracketed", low=0)
    scale: float = option(1.0, "multiplies the steps (10 for a GPU)", low=1e-9, high=1000)
    k_heads: tuple[int, ...] = option((4, 16), "Table 2: numbers of heads tuned besides top_k", low=1)
    threads: int = option(2, "torch threads (0: torch's default; the build runs one chapter at a time)", low=0)

    def check(self) -> None:
        super().check()
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"parameter seeds={list(self.seeds)}: expected distinct seeds")

    def optimizer_steps(self) -> int:
        """Optimizer steps per run: ``steps × scale``, at least 1."""
        return max(1, round(self.steps * self.scale))

    def to_table1(self) -> training.Table1:
        """The toy arms at :meth:`optimizer_steps` (Table 1's own ``scale`` multiplies its evaluation sizes: left at
        its default); a chapter re-computes its own runs."""
        return narrow(training.Table1, self, skip=("scale",), steps=self.optimizer_steps(), overwrite=True)


@dataclass(frozen=True)
class MlpAblation(ModelChapter):
    results: str = option("results", "reads identify's ranking, writes <results>/<model-name>/finetune/")
    top_k: int = option(8, "heads tuned by precise SFT", low=1)
    m_mlps: tuple[int, ...] = option((0, 2, 6), "Table 5: top-m MLP layers tuned with the top-k heads", low=0)
    train_data: str = option("embedded", "training data (embedded, math, or a .jsonl file)")
    n_train: int = option(4096, "training problems (seeded sample)", low=1)
    max_steps: int = option(60, "optimizer steps per run", low=1)
    lr: float = option(5e-4, "learning rate", low=1e-12, high=1 - 1e-12)
    batch_size: int = option(32, "rows per optimizer step", low=1)
    weight_decay: float = option(0.1, "AdamW weight decay", low=0)
    benchmarks: tuple[str, ...] = option(("two_digit", "negative", "single_digit", "generic"), "measured benchmarks")
    threads: int = option(1, "torch threads (0: torch's default)", low=0)

    def to_finetune(self, m: int) -> training.Finetune:
        """Precise SFT of the top-k heads and the top-``m`` MLP layers (tag ``top{k}-mlp{m}``), re-computed."""
        k = self.top_k
        run: dict[str, Any] = {"micro_batch_size": self.batch_size, "warmup": 0.02, "threads": self.threads or None}
        run |= {"mode": "precise", "heads": f"top-{k}", "mlps": m, "tag": f"top{k}-mlp{m}", "overwrite": True}
        return narrow(training.Finetune, self, **run)


@dataclass(frozen=True)
class Exponentiation(ModelChapter):
    n_samples: int = option(step_default(circuits_config.Generalize, "n_samples"), "pairs drawn per template", low=1)
    threshold: float = option(
        step_default(circuits_config.Generalize, "threshold"), "key heads: relative logit change below this", high=-1e-9
    )
    results: str = option("results", "<results>/<model-name>/")


@dataclass(frozen=True)
class Gsm8k(Exponentiation):
    n_samples: int = option(256, "pairs per dataset", low=1)
    top: int = option(5, "heads compared per run", low=1)

    def to_generalize(self) -> circuits_config.Generalize:
        return narrow(circuits_config.Generalize, self)


@dataclass(frozen=True)
class ComputerVsLlm(Chapter):
    model_name: str = option("embedded", MODEL)
    device: str = option("cpu", "where the model runs: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the model's weights", choices=DTYPES)
    a: int = option(3, "the first addend", low=0, high=9)
    b: int = option(4, "the second addend", low=0, high=9)
    bits: int = option(3, "width of the binary adder", low=1, high=8)

    def check(self) -> None:
        check_model(self.model_name)
        check_device(self.device)


@dataclass(frozen=True)
class SmolLM2(ModelChapter):
    model_name: str = option("smollm2-135m", MODEL)
    results: str = option("results", "files go to <results>/<model-name>/")
    n_samples: int = option(4096, "pairs drawn per operation; X_r keeps the ones the model answers right", low=8)
    example_sets: int = option(
        step_default(identify_config.Identify, "example_sets"), "sets of solved examples per template", low=1
    )
    knockout_split: str = option(
        step_default(identify_config.Identify, "knockout_split"),
        "knockout prompts: fresh X_r of problems never ranked on (held-out), or the X_r topped up",
        choices=("held-out", "in-sample"),
    )
    bootstrap: str = option(
        step_default(identify_config.Identify, "bootstrap"),
        "what the effect intervals resample",
        choices=("cluster", "prompt"),
    )
    shots: int = option(
        -1,
        "solved examples before every prompt; -1: the K the yield rule picks (shots.csv)",
        low=-1,
        high=MAX_SHOTS,
    )
    n_per_template: int = option(16, "accuracy table: prompts per template", low=1)
    knockout_samples: int = option(identify_config.BOOK_SCALE["knockout_samples"], "knockout prompts per task", low=4)
    n_random: int = option(
        step_default(identify_config.Identify, "n_random"),
        "random orders of components outside the key heads and the top k",
        low=1,
    )
    recompute: bool = option(False, "recompute the steps even when their files exist")
    stability_seeds: int = option(3, "key-head stability on addition: independent draws", low=2)
    stability_sizes: tuple[int, ...] = option((64, 128, 256), "pairs drawn (nested per seed)", low=1)

    def to_shots(self) -> prompts_config.Shots:
        """The yield per K (its ``n_per_template`` is its own, not the accuracy table's)."""
        return narrow(prompts_config.Shots, self, skip=("n_per_template",))

    def to_identify(self, shots: int, **changes) -> identify_config.Identify:
        """Identify at ``shots`` solved examples and the book's scale (``changes``: the zero-shot run's folder)."""
        return narrow(identify_config.Identify, self, shots=shots, **book_scale(self), **changes)

    def to_stability(self, shots: int) -> identify_config.Stability:
        return stability(self, shots=shots)

    def to_analyze(self) -> analyze_config.Analyze:
        return narrow(analyze_config.Analyze, self, prompt="4 + 3 = ")

    def to_accuracy(self) -> prompts_config.Accuracy:
        return narrow(prompts_config.Accuracy, self)


@dataclass(frozen=True)
class OwnModel(ModelChapter):
    """The API on a model of the reader's choice (``book/own_model.md``): a few calls of :mod:`arithmech.api`."""

    model_name: str = option("smollm2-135m", MODEL)
    task: str = option("addition", "the operation the prompts ask", choices=OPERATIONS)
    n_pairs: int = option(96, "pairs drawn; the model keeps those it answers right", low=8, high=5_000)
    shots: int = option(4, "solved examples before every prompt", low=0, high=16)
    top_k: int = option(3, "heads knocked out, attended and tuned: the top by path-patching effect", low=1, high=64)
    sft_steps: int = option(5, "optimizer steps of the precise-SFT demonstration", low=1, high=1_000)
    lr: float = option(1e-3, "its learning rate", low=1e-7, high=1.0)


# chapter (file stem) → its config
CHAPTERS: dict[str, type[Chapter] | type[Accounts] | type[Planted]] = {
    "data": Data,
    "identify": Identify,
    "analyze": Analyze,
    "explorer": Explorer,
    "beyond": Beyond,
    "finetune": Finetune,
    "appendix_exponentiation": Exponentiation,
    "appendix_gsm8k": Gsm8k,
    "appendix_mlp_ablation": MlpAblation,
    "appendix_computer_vs_llm": ComputerVsLlm,
    "appendix_smollm2": SmolLM2,
    "accounts": Accounts,
    "planted": Planted,
    "own_model": OwnModel,
}


def check(chapter: str, namespace: dict) -> Chapter | Accounts | Planted:
    """A chapter's check cell: its config from the notebook's variables (one line on a wrong value)."""
    return CHAPTERS[chapter].pick(namespace)
