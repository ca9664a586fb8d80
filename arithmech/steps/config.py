"""Every step's config, with every default written once (:mod:`arithmech.core.config`).

``python -m arithmech <step> --help`` lists exactly these fields, as flags of the same names; a chapter
builds its step's config from its papermill parameters; :func:`ensure`-style readers reuse a result set
made with the same :meth:`~arithmech.core.config.Config.reuse_key`. Importing this module does not
import torch, so a wrong value is refused before any model loads.
"""
from __future__ import annotations

from dataclasses import dataclass

from arithmech.core.config import Config, option
from arithmech.core.estimate import Estimate, Shape
from arithmech.core.inputs import ANSWER_TOKENS, DTYPES, KNOCKOUT_POSITIONS, KV_POLICIES, check_device, check_model
from arithmech.data.draw import Draw
from arithmech.data.pairfile import check_task
from arithmech.data.shots import EXAMPLE_SETS
from arithmech.methods.knockout_settings import KnockoutSettings
from arithmech.paper import KEY_THRESHOLD, N_BOOT, SFT
from arithmech.steps import memory

# Bounds (issue #28): the largest value a run can take and still finish on this project's machine (2 CPU cores,
# 24 GiB) within about a working day; each is checked when a config is built, before any model loads. The
# anchors are measured: identify draws, patches and knocks out 4 x 256 pairs of the embedded model in 45 s
# (0.04 s a pair), SmolLM2 about 10x that; one bootstrap resample costs 8 bytes per prompt and component.
MAX_PAIRS = 50_000          # pairs (or prompts) per task: ~35 min of the embedded model, ~6 h of SmolLM2
MAX_PER_TEMPLATE = 5_000    # prompts per template: 48 templates x 5,000 = 240,000 prompts
MAX_ORDERS = 1_000          # random orders, heads, MLP layers, misses, top-k: beyond the heads of a 7B model (1,024)
MAX_BOOT = 20_000           # bootstrap resamples: 20,000 x 1,000 prompts x 8 B = 160 MB per component batch
MAX_BATCH = 4_096           # prompts or rows per forward pass
MAX_RECEIVERS = 64          # upstream receivers: each costs one patched scan of every earlier sender
MAX_IG_STEPS = 256          # EAP-IG points: 8 take 3 s on SmolLM2 (128 prompts), 256 about 2 min
MAX_SEEDS = 20              # seeds, random-head draws
MAX_STEPS = 100_000         # optimizer steps: the embedded model trains 1,200 steps in ~12 min
MAX_EXTEND = 10             # learning-rate grid extensions (each adds one run per arm)
MAX_TRAIN_ROWS = 1_000_000  # training rows sampled
MAX_EPOCHS = 100            # training epochs
MAX_THREADS = 1_024         # torch intra-op threads
MAX_SCALE = 1_000           # Table 1's evaluation-size multiplier
MAX_PROMPT_CHARS = 2_000    # a prompt typed on the command line (Fig. 6c's is 7 characters)
MAX_SHOTS = 16              # solved examples before a prompt: 16 x ~8 tokens, a prompt ~8x the zero-shot one
MAX_SHOT_SETS = 1_000        # sets of examples per template: one per prompt of a 16,000-pair draw over 16 templates


def same_as(config: type, name: str):
    """Field ``name`` of step ``config`` again, for another step where it means the same: its default, help,
    choices and bounds stay written once, there (``Accuracy.answer_token`` is ``Identify``'s)."""
    f = config.__dataclass_fields__[name]
    return option(f.default, **f.metadata)


@dataclass(frozen=True)
class ModelStep(Config):
    """The fields every step that loads a model shares."""
    model_name: str = option("embedded", "embedded, smollm2-135m, a model folder, a .gguf file or a hub id")
    results: str = option("results", "results root (files go to RESULTS/<model-name>/) or the model's folder "
                          "itself", reuse=False)
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the model runs: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the model's weights", choices=DTYPES)
    overwrite: bool = option(False, "replace this step's files if the folder has them", reuse=False)

    def check(self) -> None:
        check_model(self.model_name)
        check_device(self.device)


@dataclass(frozen=True)
class Identify(ModelStep):
    """Path patching of every head and MLP, key heads, knockout, transfer (paper §4.1, §5.1).

    Each task has a control, fixed before any run (:data:`CONTROL_FLOOR`): a task whose answer token can be
    guessed from what its prompts carry is inconclusive and left out of the pooled task "all"."""
    task: str = option("all", "addition, subtraction, multiplication, division, all (the four), fig8, fig10, "
                       "exponentiation, or a template-pair file (.json / .jsonl)")
    n_samples: int = option(256, "pairs drawn per task; X_r keeps those the model answers right", low=1, high=MAX_PAIRS)
    threshold: float = option(KEY_THRESHOLD, "key heads: the effect's whole 95% bootstrap interval below this "
                              "(paper: mean below -0.05)", high=-1e-9)
    share_threshold: float = option(-0.05, "key heads by share (beside the paper's rule): the whole 95% interval of the "
                                    "head's share of the counterfactual's logit-difference effect lies below -5%: it "
                                    "carries at least 5% of the counterfactual's effect", high=-1e-9)
    n_boot: int = option(N_BOOT, "bootstrap resamples per interval", low=1, high=MAX_BOOT)
    bootstrap: str = option("cluster", "what the effect intervals resample: cluster (the problems: operation and "
                            "operand pair; prompts of one problem are not independent) or prompt (the rows)",
                            choices=("cluster", "prompt"))
    knockout_split: str = option("held-out", "held-out: rank components on one side of the problems and knock "
                                 "them out on fresh X_r of the other (arithmech.data.splits); in-sample: the "
                                 "knockout reuses the ranking X_r", choices=("held-out", "in-sample"))
    method: str = option("fast", "path patching: fast (exact, from the END caches) or reference (literal)",
                         choices=("fast", "reference"))      # arithmech.methods.patching.METHODS
    prob: bool = option(True, "also record P({C}) (a full-vocabulary softmax per patched run)")
    knockout: bool = option(True, "run the knockout curves")
    knockout_samples: int = option(256, "prompts per task in the knockout curves (X_r topped up with fresh X_r)",
                                   low=1, high=MAX_PAIRS)
    n_random: int = option(20, "random orders of components outside the key heads and the top k", low=1, high=MAX_ORDERS)
    ks: tuple[int, ...] | None = option(None, "numbers of heads to knock out (default: 1, 2, 4, ... up to all)",
                                        low=1, high=MAX_ORDERS)
    curves_for: str = option("primary", "full knockout curves for the primary task only, or for each task",
                             choices=("primary", "each"))
    knockout_positions: str = option("end", "mean-ablate at END (where heads were patched), at every position, "
                                     "or both", choices=KNOCKOUT_POSITIONS)
    pool_size: int = option(512, "X_c per template family in the reference pool of the means", low=1, high=MAX_PAIRS)
    transfer: bool = option(True, "knock the heads out on a held-out template family (Fig. 4, Fig. 10)")
    heldout: str = option("fig10", "the template family of the transfer test", choices=("fig8", "fig10"))
    answer_token: str = option("last-digit", "last-digit: the prompt carries the answer's leading digits; "
                               "single-token: one-token answers only; first: the paper's first answer token",
                               choices=ANSWER_TOKENS)
    shots: int = option(0, "solved examples of mixed operations before every X_r and X_c (0: the paper's "
                        "zero-shot prompts; arithmech.data.shots)", low=0, high=MAX_SHOTS)
    example_sets: int = option(EXAMPLE_SETS, "sets of solved examples per template, which its prompts take in turn "
                               "(1: one set for all of a template's prompts, the first scheme)", low=1, high=MAX_SHOT_SETS)
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)
    out: str | None = option(None, "the model's results folder itself (default: RESULTS/<model-name>/)", reuse=False)

    def check(self) -> None:
        super().check()
        check_task(self.task)

    def to_draw(self) -> Draw:
        """How every pair of the run is drawn (:class:`arithmech.data.draw.Draw`): X_r, X_c, the knockout's
        prompts, the reference pool, the held-out family."""
        return Draw(self.answer_token, self.shots, self.example_sets)

    def knockout_settings(self) -> KnockoutSettings:
        """The knockout's settings (:class:`arithmech.methods.knockout_settings.KnockoutSettings`)."""
        return KnockoutSettings(samples=self.knockout_samples, n_random=self.n_random, seed=self.seed, ks=self.ks,
                                curves_for=self.curves_for, positions=self.knockout_positions,
                                split=self.knockout_split, pool_size=self.pool_size, batch_size=self.batch_size)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.identify`)."""
        return memory.identify(shape, self, **known)


CONTROL_FLOOR = 0.5
"""The per-task control of identify, written before any run: a task **fails** it when its conditioned floor
(:func:`arithmech.data.answer_tokens.conditioned_floor` on its X_r, point estimate) is >= 0.5 — half its
answers can be guessed from the operation, the carried digits and one operand, so a knockout down to that
level is no evidence about the calculation. A failing task's own verdicts are inconclusive and, with several
tasks, it is left out of the pooled "all" rows (effects, key heads, the knockout's "all" prompts); which and
why is recorded in ``key_heads.json`` and ``run.json`` (``control``). Where every task fails, "all" pools
them all and is inconclusive too."""

MIN_PROBLEMS = 20
"""The least evidence a task's verdicts are decided on (issue #41; as many problem clusters as
:data:`arithmech.methods.faithfulness_rule.MIN_CLUSTERS`): a task whose X_r holds fewer distinct problems
(operation, operand pair) is **insufficient** — its verdicts are inconclusive and it is left out of "all",
like a task that fails its control (:func:`arithmech.steps.control.task_control`). A percentile bootstrap over
a handful of problem clusters, or a key head found on 4 prompts, decides nothing."""


BOOK_SCALE = dict(knockout_samples=128, pool_size=128, knockout_positions="both", prob=False)
"""The book's identify scale for a 135M model on 2 cores (the SmolLM2 appendix, the Explorer and Beyond when
they make identify's files): 128 knockout prompts, a pool of 128 X_c per family, knockout at END and at every
position, no P({C}) columns (its full-vocabulary softmax per patched row is ~40% of the patching time). The
command's defaults are :class:`Identify`'s."""

@dataclass(frozen=True)
class Analyze(ModelStep):
    """Attention of the key heads by token role, MLP projections on W_U (§4.2, §5.2); reads identify's files."""
    n_samples: int = option(256, "reference samples (X_r) the averages run over (paper: 1000)", low=1, high=MAX_PAIRS)
    prompt: str = option("4 + 3 =", "prompt of the layer-by-layer top-token table (Fig. 6c)")
    operations: str = option("pooled", "whose prompts: the operations that pass identify's control (pooled: the tasks "
                             "its pooled task holds, where the key heads were ranked) or every operation (all)",
                             choices=("pooled", "all"))
    final_norm: bool = option(True, "project through the final norm's gain")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def check(self) -> None:
        super().check()
        if not self.prompt.strip():
            raise ValueError("--prompt '': give a prompt such as '4 + 3 ='")
        if len(self.prompt) > MAX_PROMPT_CHARS:
            raise ValueError(f"--prompt has {len(self.prompt):,} characters; at most {MAX_PROMPT_CHARS:,} (a prompt such "
                             "as '4 + 3 =')")

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.analyze`)."""
        return memory.analyze(shape, self, **known)


@dataclass(frozen=True)
class Beyond(ModelStep):
    """EAP / EAP-IG against exact path patching, head→head upstream patching; reads identify's files."""
    receivers: int = option(5, "receivers of upstream patching: key heads, else the top k by effect", low=1, high=MAX_RECEIVERS)
    ig_steps: int = option(8, "EAP-IG: points on the straight path from X_r to X_c", low=1, high=MAX_IG_STEPS)
    n_samples: int = option(128, "reference samples (X_r) from identify's prompts.jsonl, a seeded subset", low=1, high=MAX_PAIRS)
    n_misses: int = option(5, "EAP's largest misses kept with their norms and MLP gates", low=0, high=MAX_ORDERS)
    operations: str = same_as(Analyze, "operations")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.beyond`)."""
        return memory.beyond(shape, self, **known)


@dataclass(frozen=True)
class Faithfulness(ModelStep):
    """The share of the counterfactual's effect the top-n components recover together, against random circuits
    (noising with mean and resample ablation, its converse, denoising); reads identify's files."""
    n_max: int = option(20, "circuits of the top 1..N components by effect rank (heads and MLPs in one ranking); "
                        "at most half the components (random circuits of N are drawn outside the top N)", low=1,
                        high=MAX_ORDERS)
    n_random: int = option(20, "random circuits of each size n, drawn outside the top n (at least 20 for a 5-95% band)",
                           low=20, high=MAX_ORDERS)
    n_samples: int = option(128, "evaluation-side X_r (problems never ranked on, X_c checked), drawn fresh",
                            low=1, high=MAX_PAIRS)
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.faithfulness`)."""
        return memory.faithfulness(shape, self, **known)


@dataclass(frozen=True)
class Stability(ModelStep):
    """Key-head sets over seeds, sample sizes, template families and counterfactuals, with Jaccard overlaps."""
    task: str = option("addition", "addition, ..., all, fig8, fig10, or a template-pair file")
    seeds: int = option(3, "independent draws: seeds SEED .. SEED+N-1", low=2, high=MAX_SEEDS)
    sizes: tuple[int, ...] = option((64, 128, 256, 512), "pairs drawn per run (nested prefixes of one draw per seed)",
                                    low=1, high=MAX_PAIRS)
    kinds: tuple[str, ...] = option(("operator", "operand"), "counterfactuals compared",
                                    choices=("operator", "operand"))
    threshold: float = option(KEY_THRESHOLD, "key heads: the effect's whole 95% interval below this", high=-1e-9)
    top: int = option(10, "size of the top-k set compared beside the key set", low=1, high=MAX_ORDERS)
    n_boot: int = option(N_BOOT, "bootstrap resamples of the prompts per interval", low=1, high=MAX_BOOT)
    shots: int = same_as(Identify, "shots")
    example_sets: int = same_as(Identify, "example_sets")
    bootstrap: str = same_as(Identify, "bootstrap")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def check(self) -> None:
        super().check()
        check_task(self.task)

    def to_draw(self) -> Draw:
        """How every pair is drawn: identify's default answer token (stability compares key-head sets of the
        token identify measures by default; no flag), this config's solved examples and their sets."""
        return Draw(Identify.__dataclass_fields__["answer_token"].default, self.shots, self.example_sets)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.stability`)."""
        return memory.stability(shape, self, **known)


@dataclass(frozen=True)
class Generalize(Config):
    """App. D and E: identify on other pairs (exponentiation templates, GSM8K or word problems) and the overlap
    of two runs' key heads (Table 3, Table 4); the appendices call it with a loaded model."""
    n_samples: int = option(256, "pairs drawn per dataset or template", low=1, high=MAX_PAIRS)
    seed: int = option(0, "seed of every draw", low=0, high=2**32 - 1)
    threshold: float = option(KEY_THRESHOLD, "key heads: relative logit change below this", high=-1e-9)
    top: int = option(10, "heads compared per run (Table 4)", low=1, high=MAX_ORDERS)
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)


@dataclass(frozen=True)
class Accuracy(ModelStep):
    """Answer-token accuracy and p({C}) per template, with Wilson intervals (accuracy_by_template.csv)."""
    n_per_template: int = option(16, "prompts drawn per template", low=1, high=MAX_PER_TEMPLATE)
    answer_token: str = same_as(Identify, "answer_token")   # the token identify measures is the one scored here

    def to_draw(self) -> Draw:
        """Zero-shot pairs of this config's answer token (:class:`arithmech.data.draw.Draw`)."""
        return Draw(self.answer_token)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.accuracy`)."""
        return memory.accuracy(shape, self, **known)


@dataclass(frozen=True)
class Shots(ModelStep):
    """The yield of identify's prompts for each number of solved examples before them, and the K a rule picks
    from the yield alone (arithmech.steps.shots; shots.csv)."""
    grid: tuple[int, ...] = option((0, 2, 4, 8), "numbers of solved examples compared", low=0, high=MAX_SHOTS)
    n_per_template: int = option(12, "validation prompts drawn per template and K (a seed of their own)", low=1,
                                 high=MAX_PER_TEMPLATE)
    answer_token: str = same_as(Identify, "answer_token")
    example_sets: int = same_as(Identify, "example_sets")
    batch_size: int = option(64, "prompts per forward pass", low=1, reuse=False, high=MAX_BATCH)

    def check(self) -> None:
        super().check()
        if list(self.grid) != sorted(set(self.grid)):
            raise ValueError(f"--grid {','.join(map(str, self.grid))}: expected distinct values in increasing order")

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.shots`)."""
        return memory.shots(shape, self, **known)


@dataclass(frozen=True)
class Counterfactuals(ModelStep):
    """Identify with the paper's operator counterfactual and with the operand counterfactual, and their overlap."""
    task: str = option("addition", "the task both counterfactuals run on")
    n_samples: int = option(128, "pairs drawn per counterfactual", low=1, high=MAX_PAIRS)

    def check(self) -> None:
        super().check()
        check_task(self.task)


@dataclass(frozen=True)
class Finetune(ModelStep):
    """One fine-tune arm: precise SFT of the key heads or full SFT; accuracy before and after (Tables 1, 2, 5)."""
    mode: str = option("precise", "precise: the selected heads' slices only; full: every parameter",
                       choices=("precise", "full"))
    heads: str = option("top-8", "top-K (ranked in the model's results folder) or L.H,L.H (the paper tunes 32 of "
                        "LLaMA2-7B's 1,024 heads)")
    mlps: int = option(0, "also train the top-M MLP layers", low=0, high=MAX_ORDERS)
    kv_policy: str = option("any", "GQA: which shared K/V heads train (arithmech.finetune.adapter)",
                            choices=KV_POLICIES)
    rescale: bool = option(True, "rescale head gradients by H/h")
    train_data: str = option("embedded", "embedded | two-digit | negative | math | a .jsonl file of {prompt, completion}")
    n_train: int | None = option(None, "a seeded sample of this many training rows", low=1, high=MAX_TRAIN_ROWS)
    benchmarks: tuple[str, ...] = option(("toy",), "toy | paper | gsm8k, addsub, singleeq, svamp, mmlu, csqa, ...")
    limit: int | None = option(None, "evaluate a seeded sample of this many rows per benchmark", low=1, high=MAX_PAIRS)
    data_dir: str | None = option(None, "benchmark folder (default: $ARITHMECH_DATA or ../shared/data)", reuse=False)
    tag: str | None = option(None, "file name suffix: finetune/<mode>-<tag>.json")
    epochs: float = option(SFT["epochs"], "training epochs (the paper: 2)", low=0, high=MAX_EPOCHS)
    max_steps: int = option(-1, "stop after this many optimizer steps (-1: the epochs decide)", low=-1, high=MAX_STEPS)
    lr: float = option(SFT["lr"], "learning rate (the paper: 2e-5)", low=0)
    batch_size: int = option(SFT["batch_size"], "rows per optimizer step (micro batch x accumulation)", low=1, high=MAX_BATCH)
    micro_batch_size: int = option(8, "rows per forward pass", low=1, high=MAX_BATCH)
    warmup: float = option(SFT["warmup"], "warm-up ratio of the schedule", low=0, high=1)
    weight_decay: float = option(SFT["weight_decay"], "AdamW weight decay", low=0)
    bf16: bool = option(False, "bf16 autocast (the trained slices stay float32)")
    fsdp: bool = option(False, "full SFT: FSDP through TrainingArguments")
    save_adapter: bool = option(False, "keep the trained slices (adapter.safetensors) beside the record")
    threads: int | None = option(None, "torch intra-op threads (default: torch's)", low=1, reuse=False, high=MAX_THREADS)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.finetune`)."""
        return memory.finetune(shape, self, **known)


@dataclass(frozen=True)
class Table1(ModelStep):
    """Table 1 over whole learning-rate grids: base (and with solved examples), full SFT, precise SFT of the key
    heads, of the share rule's heads, of random heads (layer-matched, and of any layer) sharing no tuned parameter."""

    def check(self) -> None:
        super().check()
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"--seeds {','.join(map(str, self.seeds))}: give distinct seeds")
        if len(self.seeds) > MAX_SEEDS:
            raise ValueError(f"--seeds: {len(self.seeds)} seeds; at most {MAX_SEEDS}")

    model_name: str = option("smollm2-135m", "embedded, smollm2-135m, a model folder, a .gguf file or a hub id")
    suite: str = option("cpu", "the measures: cpu (a real small LLM on 2 CPU cores), paper (the paper's six "
                        "benchmarks, for a GPU) or toy (the embedded model's skills); arithmech.evals.suites")
    top_k: int = option(8, "heads tuned by precise SFT (ranked in the results folder)", low=1, high=MAX_ORDERS)
    seeds: tuple[int, ...] = option((0, 1, 2), "training seeds", low=0, high=2**32 - 1)
    draws: int = option(10, "random-head draws at each rate of each random arm (draw d trains with seed "
                        "seeds[d mod len(seeds)])", low=1, high=MAX_SEEDS)
    frontier_seeds: int = option(5, "seeds at each rate on the validation frontier of full, precise-key and "
                                 "precise-share", low=1, high=MAX_SEEDS)
    shots: int = option(4, "solved carry examples before each item of the base-shots control (format vs "
                        "arithmetic)", low=1, high=MAX_ORDERS)
    cloze_items: int = option(100, "cpu suite: items of each cloze set in a run's test (the suite has 200; 100 "
                              "about halves a run's evaluation)", low=1, high=MAX_PAIRS)
    replicate_ends: bool = option(True, "replicate a bracketed grid's two end rates too (seeds, draws, frontier "
                                  "seeds); --no-replicate-ends keeps their first run only, a cut of grid points to "
                                  "fit the machine (arithmech.steps.arms_grid.replicated)")
    lm_tokens: int = option(2048, "cpu suite: generic-text tokens of a run's test loss (the suite has 4,096)",
                            low=256, high=MAX_PAIRS)
    steps: int | None = option(None, "optimizer steps per run (default: the knee of full SFT's validation learning "
                               "curve, finetune/curve.json, made first when missing)", low=1, high=MAX_STEPS)
    curve_steps: int = option(240, "length of the learning curve that sets the default --steps", low=20, high=MAX_STEPS)
    curve_only: bool = option(False, "make (or keep) the learning curve, then stop")
    batch_size: int = option(16, "rows per optimizer step", low=1, high=MAX_BATCH)
    max_extend: int = option(3, "grid extensions (full's grid, the precise arms' grid) until bracketed", low=0,
                             high=MAX_EXTEND)
    scale: float = option(1.0, "paper suite: multiply the evaluation sizes (1: a CPU run, 10: a GPU run)", low=1e-9, high=MAX_SCALE)
    data_dir: str | None = option(None, "benchmark folder (default: $ARITHMECH_DATA or ../shared/data)", reuse=False)

    def memory(self, shape: Shape, **known) -> Estimate:
        """What this run holds at its peak (:func:`arithmech.steps.memory.arms`)."""
        return memory.arms(shape, self, **known)


@dataclass(frozen=True)
class TrainEmbedded(Config):
    """Train the embedded arithmetic model (deterministic, about 12 minutes on 2 cores)."""
    out: str | None = option(None, "output folder (default: the package's embedded/model/)")
    steps: int = option(1200, "optimizer steps", low=1, high=MAX_STEPS)
    batch_size: int = option(64, "sequences per step", low=1, high=MAX_BATCH)
    seed: int = option(0, "seed of the data and the initialisation", low=0, high=2**32 - 1)
    weight_decay: float = option(0.01, "AdamW weight decay", low=0)
    overwrite: bool = option(False, "replace the model files in a non-empty --out (other files there are kept)")


@dataclass(frozen=True)
class EmbeddedAccuracy(Config):
    """Accuracy on the paper's templates: fresh draws of trained pairs and the embedded model's held-out splits."""
    model_name: str = option("embedded", "embedded, smollm2-135m, a model folder, a .gguf file or a hub id")
    seed: int = option(1, "seed of the draws", low=0, high=2**32 - 1)
    device: str = option("cpu", "where the model runs: cpu, cuda, cuda:N or mps (checked against this machine)")
    dtype: str = option("float32", "the model's weights", choices=DTYPES)

    def check(self) -> None:
        check_model(self.model_name)
        check_device(self.device)


@dataclass(frozen=True)
class Book(Config):
    """Execute every chapter with papermill (atomically) and build the HTML book."""
    only: str | None = option(None, "execute only this chapter (file stem, e.g. identify)")
    set: tuple[str, ...] | None = option(None, "KEY=VALUE: a parameter for every chapter that has it (model=...) or "
                                         "for one (identify.n_samples=32); repeat the flag for several",
                                         repeat=True)
    skip_execute: bool = option(False, "render the executed copies that exist; execute nothing")
    html: bool = option(True, "run jupyter-book after executing")
    root: str = option(".", "the book's root (holds _config.yml, _toc.yml)")
    config: str | None = option(None, "parameter file relative to the root (default: book/book.yml)")
