"""Identify's files read back: the one reader of the identify wing's files (identify's and stability's), each file
read and checked through :mod:`arithmech.core.results`.

* :class:`IdentifyFiles` — identify's files of a folder, each read on first use, ``None`` where absent (what the
  claims read, :class:`arithmech.claims.evidence.Context`); :class:`Ranking` — the same with its key heads and
  effects required, read up front by :meth:`Ranking.read`, :meth:`~Ranking.of` and :meth:`~Ranking.made` (what the
  pages quote);
* :class:`Result` and :func:`read` — those files as the run made with a config wrote them (the step protocol:
  :mod:`arithmech.identify.run` computes and writes them);
* :class:`StabilityResult` and :func:`read_stability` — the stability step's three files
  (:mod:`arithmech.steps.stability`); :class:`StabilityFiles` — the same without the config that made them;
* :func:`operations`, :func:`load_key_heads`, :func:`ranked_inputs`, :func:`bootstrap_unit` and
  :func:`recorded_setting` — what the later steps (analyze, beyond, faithfulness) read of identify's files, through
  :class:`Ranking`: the operations whose prompts they read, the heads they study, the ranking with a seeded subset of
  the kept prompts, what the effect intervals resampled, and the run's recorded parameters;
* :func:`read_ranking` — the heads and MLP layers best first, as Table 1 and the fine-tune read them, each file's shape
  checked (:func:`check_key_heads`, :func:`check_effects`) before any model loads.

Later wings import this module, never identify's computing modules.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from arithmech.core import results, safe_read
from arithmech.core.geometry import Geometry
from arithmech.core.inputs import quoted
from arithmech.core.safe_read import ResultsError
from arithmech.data.draw import Draw
from arithmech.data.floors import not_passed
from arithmech.data.pairs import Sample, as_samples, reference_samples
from arithmech.finetune.heads import check_heads_in_model
from arithmech.identify.config import Identify as Config
from arithmech.identify.config import Stability
from arithmech.methods.attention import Head
from arithmech.methods.effects import ranking, studied_heads
from arithmech.steps.control import recomputed


@dataclass(frozen=True)
class Result:
    """Identify's files as a run made with ``config`` wrote them (what :func:`arithmech.pipeline.ensure.ensure` returns
    for an :class:`Identify` config; :func:`read`). Each field is read, checked, from the file it is named after:

    * ``prompts`` — ``prompts.jsonl``: the kept X_r / X_c pairs, one dict each;
    * ``effects`` — ``effects.csv``: each head's and MLP's effect per task, with its 95% interval;
    * ``key_heads`` — ``key_heads.json``: the key heads of the pooled task and the rule that chose them;
    * ``answer_tokens`` — ``answer_tokens.csv`` (``None`` for ready-made samples: no template counts);
    * ``knockout`` — ``knockout.csv`` (``None`` where the run made no knockout);
    * ``transfer`` — ``transfer.csv`` (``None`` where the run made no transfer);
    * ``heldout`` — ``heldout.json`` (``None`` where absent);
    * ``run`` — the ``identify`` record of ``run.json`` (parameters, samples kept per task, versions, timings);
    * ``config`` — the config the files were made with (or reused for)."""

    config: Config
    prompts: list[dict]
    effects: pd.DataFrame
    key_heads: dict
    run: dict
    answer_tokens: pd.DataFrame | None = None
    knockout: pd.DataFrame | None = None
    transfer: pd.DataFrame | None = None
    heldout: dict | None = None


class IdentifyFiles(results.Files):
    """Identify's files of a folder without the config that made them (:class:`arithmech.core.results.Files`: each read
    and checked on first use, once; ``None`` where absent), named as :class:`Result`'s fields: what the claims'
    deciders read through :class:`arithmech.claims.evidence.Context`; :class:`Ranking` requires its key heads and
    effects (what the pages and the later steps' readers below read)."""

    @property
    def prompts(self) -> list[dict] | None:
        """``prompts.jsonl``: the kept X_r / X_c pairs, one dict each."""
        return self.file("prompts.jsonl")

    @property
    def samples(self) -> list[Sample] | None:
        """``prompts.jsonl`` as samples (:func:`arithmech.data.pairs.as_samples`: a row that is not a prompt is a
        :class:`~arithmech.core.safe_read.ResultsError`)."""
        return None if self.prompts is None else as_samples(self.prompts, self.folder)

    @property
    def effects(self) -> pd.DataFrame | None:
        """``effects.csv``: each head's and MLP's effect per task, with its 95% interval."""
        return self.file("effects.csv")

    @property
    def effect_clusters(self) -> pd.DataFrame | None:
        """``effects_clusters.csv``: each head's mean effect per problem cluster and task (runs from issue 63 on)."""
        return self.file("effects_clusters.csv")

    @property
    def crossfit(self) -> pd.DataFrame | None:
        """``knockout_crossfit.csv``: the knockout cross-fitted over the ranking side's problem clusters (written by
        ``python -m arithmech crossfit`` after identify)."""
        return self.file("knockout_crossfit.csv")

    @property
    def key_heads(self) -> dict | None:
        """``key_heads.json``: the key heads of the pooled task, the rule that chose them, the control."""
        return self.file("key_heads.json")

    @property
    def answer_tokens(self) -> pd.DataFrame | None:
        """``answer_tokens.csv``: the most frequent answer token's share per task and template."""
        return self.file("answer_tokens.csv")

    @property
    def knockout(self) -> pd.DataFrame | None:
        """``knockout.csv``: accuracy with the top-k, random and every head knocked out."""
        return self.file("knockout.csv")

    @property
    def transfer(self) -> pd.DataFrame | None:
        """``transfer.csv``: the key heads' knockout on the held-out families."""
        return self.file("transfer.csv")

    @property
    def heldout(self) -> dict | None:
        """``heldout.json``: the key heads knocked out on a held-out template family."""
        return self.file("heldout.json")

    @property
    def run(self) -> dict | None:
        """The ``identify`` record of ``run.json`` (parameters, samples kept per task, versions, timings)."""
        return self.record("identify")

    @property
    def recorded(self) -> dict:
        """:attr:`run`, where ``run.json`` has it; a :class:`ResultsError` saying to re-run identify where not."""
        if self.run is None:
            raise ResultsError("run.json records no identify run: re-run python -m arithmech identify")
        return self.run

    @property
    def parameters(self) -> dict:
        """The parameters identify recorded (:attr:`recorded`'s)."""
        return self.recorded["parameters"]


class Ranking(IdentifyFiles):
    """Identify's files as the pages quote them (:meth:`read`, :meth:`of`, :meth:`made`): :class:`IdentifyFiles` whose
    ``key_heads`` and ``effects`` are read and checked up front, a missing one the :class:`FileNotFoundError` of
    :func:`arithmech.core.results.read` (naming it and the command that writes it). They are :class:`Result`'s, so a
    page counting key heads takes either (:func:`arithmech.report.views.counts.key_heads`)."""

    @property
    def key_heads(self) -> dict:
        """``key_heads.json``, required."""
        return self.file("key_heads.json", required=True)

    @property
    def effects(self) -> pd.DataFrame:
        """``effects.csv``, required."""
        return self.file("effects.csv", required=True)

    @classmethod
    def read(cls, folder: str | Path) -> Ranking:
        """Identify's files of ``folder``, its key heads and effects read now."""
        files = cls(folder)
        files.key_heads, files.effects  # noqa: B018 (read now: a missing one raises here)
        return files

    @classmethod
    def of(cls, results_root: str | Path, model_name: str, under: str = "") -> Ranking:
        """:meth:`read` of ``model_name``'s folder under ``results_root`` (``under``: a run kept in a subfolder of it,
        e.g. ``zero-shot``)."""
        return cls.read(results.model_folder(results_root, model_name) / under)

    @classmethod
    def made(cls, results_root: str | Path, model_name: str, under: str = "") -> Ranking | None:
        """:meth:`of`, or ``None`` where identify wrote no ``key_heads.json`` there."""
        folder = results.model_folder(results_root, model_name) / under
        return cls.read(folder) if results.exists(folder, "key_heads.json") else None


def read(folder: str | Path, config: Config) -> Result:
    """Identify's files in ``folder`` (:class:`Ranking`'s; those every run writes required) and its ``run.json``
    record, as the :class:`Result` of a run made with ``config``."""
    files = Ranking(folder)
    return Result(
        config=config,
        prompts=files.file("prompts.jsonl", required=True),
        effects=files.effects,
        key_heads=files.key_heads,
        run=files.recorded,
        answer_tokens=files.answer_tokens,
        knockout=files.knockout,
        transfer=files.transfer,
        heldout=files.heldout,
    )


def of(config: Config) -> Result:
    """The files of ``config``'s run, where it writes them (``config.out``, else the model's folder under
    ``config.results``), read as by :func:`read`: what a page that ran identify reads back, never naming the folder."""
    return read(Path(config.out) if config.out else results.model_folder(config.results, config.model_name), config)


def check_key_heads(kh, path: str | Path, geo: Geometry | None = None) -> tuple[str, list, list]:
    """Shape of a parsed ``key_heads.json``; returns ``(task, heads, mlps)``, best first."""
    bad = lambda msg: ValueError(f"{quoted(path)}: {msg}; rerun `python -m arithmech identify` to rewrite it")
    if not isinstance(kh, dict):
        raise bad(f"must be a JSON object with 'task' and 'heads', not {type(kh).__name__}")
    if not isinstance(kh.get("task"), str):
        raise bad("needs a 'task' (a string)")
    rows = {"heads": kh.get("heads"), "mlps": kh.get("mlps", [])}
    for key, val in rows.items():
        if not isinstance(val, list):
            raise bad(f"'{key}' must be a list, not {type(val).__name__}")
        for i, r in enumerate(val):
            need = ("layer", "head") if key == "heads" else ("layer",)
            if not isinstance(r, dict) or any(type(r.get(k)) is not int or r[k] < 0 for k in need):
                raise bad(f"{key}[{i}] must be an object with whole numbers >= 0 for {' and '.join(need)}")
    heads = [(r["layer"], r["head"]) for r in rows["heads"]]
    mlps = [r["layer"] for r in rows["mlps"]]
    try:
        check_heads_in_model(heads, geo, what=str(path))
    except ValueError as e:
        raise bad(str(e).split(": ", 1)[1]) from None
    if geo is not None and any(m >= geo.n_layers for m in mlps):
        raise bad(f"an MLP layer is beyond the model's {geo.n_layers} layers")
    return kh["task"], heads, mlps


def check_effects(df, task: str, path: str | Path, geo: Geometry | None = None) -> None:
    """Shape of ``effects.csv`` for ``task``: the columns, whole-number layers and heads (or ``mlp``), finite
    effects, no duplicate rows, and — with the geometry — every head (and MLP, if any) of the model."""
    bad = lambda msg: ValueError(
        f"{path}: {msg}; the file looks truncated or edited — rerun `python -m arithmech identify` to rewrite it"
    )
    missing = {"task", "layer", "head", "effect"} - set(df.columns)
    if missing:
        raise bad(f"missing column(s) {sorted(missing)}")
    rows = df[df["task"] == task]
    if rows.empty:
        raise bad(f"has no rows for task {task!r} (the task of key_heads.json)")
    heads: set[tuple[int, int]] = set()
    mlps: set[int] = set()
    for l, h, e in zip(rows["layer"], rows["head"].astype(str), rows["effect"]):
        try:
            l, e = int(l), float(e)
        except (TypeError, ValueError):
            raise bad(f"a row has layer {l!r} / effect {e!r}") from None
        if not math.isfinite(e) or l < 0 or not (h == "mlp" or h.isdigit()):
            raise bad(f"row ({l}, {h!r}) has effect {e!r}")
        if (l in mlps) if h == "mlp" else ((l, int(h)) in heads):
            raise bad(f"row ({l}, {h}) appears twice for task {task!r}")
        if h == "mlp":
            mlps.add(l)
        else:
            heads.add((l, int(h)))
    if geo is not None:
        want = {(l, h) for l in range(geo.n_layers) for h in range(geo.n_heads)}
        if heads != want:
            raise bad(
                f"task {task!r} has {len(heads & want)} of the model's {len(want)} heads"
                + (f" and {len(heads - want)} outside it" if heads - want else "")
            )
        if mlps and mlps != set(range(geo.n_layers)):
            raise bad(f"task {task!r} has {len(mlps)} of the model's {geo.n_layers} MLP rows")


def read_ranking(folder: str | Path, geo: Geometry | None = None) -> tuple[list, list]:
    """Heads and MLP layers, best first, of a model's results ``folder``: ``key_heads.json`` (checked),
    extended by the rest of that task's ``effects.csv`` ranking (checked), both read through the results
    contract; with ``geo``, ``effects.csv`` must hold every head of the model."""
    folder = Path(folder)
    path = folder / "key_heads.json"
    if not os.path.lexists(path):
        raise FileNotFoundError(
            f"{quoted(path)} does not exist: run `python -m arithmech identify` first (it writes the "
            "ranked key heads), or pass --heads L.H,L.H"
        )
    try:
        kh = json.loads(safe_read.read_text(path, folder))  # a regular file of the folder, bounded
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{quoted(path)} is not valid JSON ({e}); rerun `python -m arithmech identify`") from None
    task, heads, mlps = check_key_heads(kh, path, geo)  # shape first: the most specific message
    results.read(folder, "key_heads.json")  # then the manifest (edited? incomplete?)
    df = results.read(folder, "effects.csv")
    check_effects(df, task, folder / "effects.csv", geo)
    all_h, all_m = ranking(df, task)
    heads += [h for h in all_h if h not in heads]
    mlps += [m for m in all_m if m not in mlps]
    return heads, mlps


STABILITY_FILES = ("stability.csv", "stability_runs.csv", "stability_heads.csv")
"""The step's files, in the order of :class:`StabilityResult`'s ``table``, ``runs``, ``heads``."""


@dataclass(frozen=True)
class StabilityResult:
    """A stability run's files as a run made with ``config`` wrote them (:func:`read_stability`; what
    :func:`arithmech.steps.stability.run` and :func:`arithmech.pipeline.ensure.ensure` return for a
    :class:`Stability` config), each read and checked:

    * ``table`` — ``stability.csv``: the Jaccard comparisons (size vs largest, between seeds, kinds, families);
    * ``runs`` — ``stability_runs.csv``: each run (kind, seed, size, family): its prompts, key and top sets;
    * ``heads`` — ``stability_heads.csv``: per head and kind, how often it is key / in the top, and its effect with
      its interval in the reference run;
    * ``record`` — the ``stability`` record of ``run.json`` (parameters, timings, versions, the estimate);
    * ``config`` — the config the files were made with (or reused for)."""

    config: Stability
    table: pd.DataFrame
    runs: pd.DataFrame
    heads: pd.DataFrame
    record: dict


def read_stability(folder: str | Path, config: Stability) -> StabilityResult:
    """The stability files of ``folder`` (checked reads) and the step's ``run.json`` record, as the
    :class:`StabilityResult` of a run made with ``config``."""
    table, runs, heads = (results.read(folder, n) for n in STABILITY_FILES)
    record = results.read_run(folder)["steps"]["stability"]
    return StabilityResult(config=config, table=table, runs=runs, heads=heads, record=record)


class StabilityFiles(results.Files):
    """The stability step's files of a folder without the config that made them (:class:`arithmech.core.results.
    Files`), named as :class:`StabilityResult`'s fields: what the claims' deciders read."""

    @property
    def table(self) -> pd.DataFrame | None:
        """``stability.csv``: the Jaccard comparisons."""
        return self.file("stability.csv")

    @property
    def runs(self) -> pd.DataFrame | None:
        """``stability_runs.csv``: each run's prompts, key and top sets."""
        return self.file("stability_runs.csv")

    @property
    def heads(self) -> pd.DataFrame | None:
        """``stability_heads.csv``: per head and kind, how often it is key / in the top."""
        return self.file("stability_heads.csv")


def operations(choice: str, folder: str | Path) -> list[str] | None:
    """The operations whose prompts a step reading identify's files reads (analyze's and beyond's ``operations``,
    ``choice``; one sample per question): under ``"pooled"`` the tasks that pass identify's control,
    recomputed under its current version from the kept prompts (:func:`arithmech.steps.control.recomputed`, as the
    claims read it), where the key heads were ranked; ``None`` (every operation) under ``"all"``, where no task names an
    operation, or where every task fails (the claims then read the step's verdicts as inconclusive)."""
    if choice == "all":
        return None
    files = Ranking(folder)
    prompts = as_samples(files.file("prompts.jsonl", required=True), folder)
    c, ops = recomputed(files.key_heads, prompts), {s.op for s in prompts}
    return [t for t in c.get("pooled") or [] if t in ops and t not in not_passed(c)] or None


def load_key_heads(folder: str | Path) -> tuple[list[Head], str]:
    """The heads to analyze from identify's files (checked by the results contract) and where they come
    from: the key heads of ``key_heads.json``, ranked, or where none passed, the top ones by effect rank
    (:func:`arithmech.methods.effects.studied_heads`, the rule every later step uses)."""
    files = Ranking(folder)
    kh = files.key_heads
    try:
        heads = [(int(r["layer"]), int(r["head"])) for r in kh["heads"]]
    except (TypeError, KeyError, ValueError):
        raise ResultsError(
            f"{quoted(Path(folder) / 'key_heads.json')}: each head needs integer 'layer' and 'head'; "
            "re-run python -m arithmech identify"
        ) from None
    if heads:
        return heads, "key heads"
    return studied_heads(files.effects, kh["task"], kh["threshold"])


def ranked_inputs(
    folder: str | Path, n_samples: int, seed: int, ops: list[str] | None = None
) -> tuple[pd.DataFrame, dict, list[Sample]]:
    """identify's ``effects.csv``, ``key_heads.json`` (:class:`Ranking`'s) and a seeded subset of ``n_samples`` of its
    prompts of the operations ``ops`` (every one when None): what beyond reads."""
    files = Ranking(folder)
    return files.effects, files.key_heads, reference_samples(Path(folder), n_samples, seed, ops)


def bootstrap_unit(folder: str | Path) -> str:
    """What identify's effect intervals resampled (``run.json``; a record without it resampled prompts)."""
    return IdentifyFiles(folder).parameters.get("bootstrap", "prompt")


def recorded_setting(folder: str | Path) -> dict:
    """What faithfulness takes from identify's record: its parameters, its draw (``draw``, ``example_sets``), the
    pooled tasks (``pooled``) and the ranked task (``ranked_task``)."""
    files = Ranking(folder)
    rec, kh = files.run, files.key_heads
    p = dict(rec.get("parameters") or {}) if isinstance(rec, dict) else {}
    need = ["tasks", "seed", "pool_size"] + (["heldout"] if p.get("transfer", True) else []) + ["answer_token"]
    if missing := [k for k in need if k not in p]:
        raise ResultsError(
            f"{quoted(Path(folder) / results.RUN)} records no identify run with {', '.join(missing)} "
            "(edited, or written by an older arithmech): re-run python -m arithmech identify"
        )
    if not isinstance(kh.get("task"), str):
        raise ResultsError(
            f"{quoted(Path(folder) / 'key_heads.json')} names no ranked task: re-run python -m arithmech identify"
        )
    p["draw"] = Draw.from_record(p)  # identify's draw: answer token, shots, example sets
    p["example_sets"] = p["draw"].example_sets
    p["pooled"] = (kh.get("control") or {}).get("pooled") or p["tasks"]
    p["ranked_task"] = kh["task"]
    return p
