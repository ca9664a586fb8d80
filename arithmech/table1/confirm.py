"""``python -m arithmech confirm``: the protocol's runs, on fresh seeds and fresh items, resumable.

``--write-protocol`` writes the protocol (:mod:`arithmech.table1.protocol`) and stops; it is committed before the first
run (a test reads git's history). Without it, the runner reads the protocol and makes, in order: base scored on the
fresh items; the pilots (one run per rate, validation only), whose rule then fixes the rates the protocol left to
them; then every confirmatory run, in rounds — round ``i`` trains each arm at seed ``seeds[i]`` — so a run stopped
part-way leaves every arm with the same seeds. Each run is one record in ``<model>/confirmation/v2/``, written whole
(a crash leaves the record or nothing), its ``parameters`` saying ``phase: confirmation`` and the protocol's sha256;
a record made with the same arguments is kept (resume). ``--max-runs`` stops after that many new runs, so a session
commits what it made and the next one resumes. ``confirmation.json`` beside the records lists what is made, the
pilots' rates and the machine time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

from arithmech.core import provenance, records, safe_read
from arithmech.core import results as results_io
from arithmech.core.atomic import atomic_json
from arithmech.core.config import command_line
from arithmech.core.inputs import quoted
from arithmech.core.models import load_model
from arithmech.core.progress import Progress
from arithmech.data.sentences import generic_text
from arithmech.data.splits import carry_items, plain_items
from arithmech.evals import cloze, measures
from arithmech.evals.measures import accuracy_measure
from arithmech.evals.scoring import greedy_exact
from arithmech.evals.suites import cpu_sizes, get_suite
from arithmech.finetune.heads import model_geometry
from arithmech.steps.config_training import Confirm as Config
from arithmech.table1 import protocol as protocols
from arithmech.table1.plan import pilot_rate
from arithmech.table1.protocol import ITEMS, PILOT, PILOT_SEED, record_path
from arithmech.table1.train import train_arm


def heads_of(protocol: dict, arm: dict, i: int) -> list[list[int]] | None:
    """The heads ``arm`` tunes at the protocol's ``i``-th seed (None: every parameter)."""
    if arm["mode"] == "full":
        return None
    return protocol["heads"]["key"] if arm["heads"] == "key" else protocol["heads"][arm["name"]][i]


def args_hash(protocol_sha: str, arm: str, seed: int | None, lr: float | None, heads) -> str:
    """What a record was made with: the protocol, the arm, the seed, the rate, the heads."""
    text = json.dumps({"protocol": protocol_sha, "arm": arm, "seed": seed, "lr": lr, "heads": heads}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _read(folder: Path, path: Path) -> dict:
    return json.loads(safe_read.read_text(path, folder))


def made(folder: Path, path: Path, h: str, overwrite: bool) -> bool:
    """Whether the record at ``path`` exists with the same arguments; one made otherwise is refused unless
    ``overwrite`` (it would be replaced)."""
    if not path.exists():
        return False
    if _read(folder, path).get("parameters", {}).get("args_sha256") == h:
        return True
    if not overwrite:
        raise ValueError(f"{quoted(path)} was made with other arguments: --overwrite replaces it")
    return False


def evaluate_fresh(net, tok, data_seed: int, data_dir) -> dict:
    """The confirmation's measures: the fresh carry items, the fresh cloze items and the generic text's second half
    (:data:`arithmech.table1.protocol.ITEMS`), and the exploration's 400 carry items beside them."""
    fresh = carry_items("test", ITEMS.carry_fresh, data_seed, start=ITEMS.carry_start)
    old = carry_items("test", 400, data_seed)
    out = {
        "carry_fresh": accuracy_measure([int(x) for x in greedy_exact(net, tok, fresh, batch_size=64)]),
        "carry": accuracy_measure([int(x) for x in greedy_exact(net, tok, old, batch_size=64)]),
    }
    for name in protocols.CLOZE:
        items = cloze.fresh(name, ITEMS.cloze_fresh, data_seed, ITEMS.cloze_used, data_dir)
        out[f"{name}_fresh"] = cloze.score(net, tok, items)
    lo, hi = ITEMS.lm_chunks
    losses = measures.lm_losses(net, tok, generic_text(), max_tokens=256 * hi)[lo:hi]
    out["lm_loss_fresh"] = measures.loss_measure(losses)
    return out


class RunKey(NamedTuple):
    """What names a record: its path, arm, seed, rate, heads and the hash of the arguments it was made with."""

    path: Path
    arm: str
    seed: int | None
    lr: float | None
    heads: list | None
    h: str


class Runner:
    """One confirmation: its protocol, folder and config; :meth:`run_all` makes every planned record."""

    def __init__(self, config: Config, out: Path, command: str):
        self.c, self.out, self.command = config, out, command
        self.protocol = protocols.read(out)
        self.sha = safe_read.sha256(out / protocols.FILE, out)
        self.t = self.protocol["training"]
        self.made = 0

    def _train(self, arm: dict, seed: int, lr: float, heads) -> tuple:
        suite = get_suite("cpu")
        if arm["train"] == "plain":
            suite = dataclasses.replace(
                suite, train=lambda n, seed=0, data_seed=0: [(p, " " + a) for p, a in plain_items(n, data_seed, seed)]
            )
        c = SimpleNamespace(
            model_name=self.c.model_name, device=self.c.device, dtype=self.c.dtype, batch_size=self.t["batch_size"]
        )
        kv = arm["kv_policy"] or "any"
        net, tok, tr = train_arm(c, suite, heads, lr, seed, self.t["steps"], self.t["data_seed"], kv)  # type: ignore[arg-type]
        return suite, net, tok, tr

    def _write(self, key: RunKey, results: dict, tr: dict | None, started: float, phase: str, eval_s: float) -> None:
        mode = "base" if tr is None else ("full" if key.heads is None else "precise")
        rec = records.finetune_record(
            model=self.protocol["model"],
            mode=mode,
            tag=key.path.stem,
            command=self.command,
            seed=key.seed,
            device=self.c.device,
            dtype=self.c.dtype,
            heads=key.heads if key.heads is not None else "all",
            tuned_parameters=(tr or {}).get("tuned_parameters", 0),
            total_parameters=(tr or {}).get("total_parameters"),
            parameters={
                "phase": phase,
                "protocol_sha256": self.sha,
                "arm": key.arm,
                "lr": key.lr,
                "args_sha256": key.h,
                "eval_s": eval_s,
            },
            train=tr,
            results=results,
            versions=provenance.versions(),
            wall_s=round(time.time() - started, 1),
        )
        atomic_json(key.path, rec)
        self.made += 1

    def base(self) -> None:
        path, h = record_path(self.out, "base"), args_hash(self.sha, "base", None, None, None)
        if made(self.out, path, h, self.c.overwrite):
            return
        started = time.time()
        net, tok, _ = load_model(
            self.c.model_name, device=self.c.device, dtype=self.c.dtype, attn_implementation="sdpa"
        )
        results = evaluate_fresh(net, tok, self.t["data_seed"], self.c.data_dir)
        key = RunKey(path, "base", None, None, None, h)
        self._write(key, results, None, started, "confirmation", round(time.time() - started, 1))

    def pilot(self, name: str, lr: float) -> None:
        arm = next(a for a in self.protocol["arms"] if a["name"] == name)
        heads = self.protocol["heads"]["key"] if arm["mode"] == "precise" else None
        path, h = record_path(self.out, name, lr=lr), args_hash(self.sha, f"pilot:{name}", PILOT_SEED, lr, heads)
        if made(self.out, path, h, self.c.overwrite):
            return
        started = time.time()
        suite, net, tok, tr = self._train(arm, PILOT_SEED, lr, heads)
        t0 = time.time()
        val = suite.evaluate(net, tok, "val", cpu_sizes(), self.t["data_seed"], data_dir=self.c.data_dir)
        self._write(RunKey(path, name, PILOT_SEED, lr, heads, h), val, tr, started, "pilot", round(time.time() - t0, 1))

    def pilot_rates(self) -> dict[str, float]:
        """Each pilot's rate by its rule (:func:`arithmech.table1.plan.pilot_rate`), from its records."""
        out = {}
        for key, (name, rates) in PILOT.items():
            val = {lr: _read(self.out, record_path(self.out, name, lr=lr))["results"]["carry"]["value"] for lr in rates}
            out[f"pilot:{key}"] = pilot_rate(val)
        return out

    def rate(self, arm: dict, pilots: dict[str, float]) -> float:
        return pilots[arm["rate"]] if arm["rate"].startswith("pilot:") else arm["lr"]

    def round_run(self, i: int, seed: int, arm: dict, pilots: dict[str, float]) -> None:
        heads, lr = heads_of(self.protocol, arm, i), self.rate(arm, pilots)
        path, h = record_path(self.out, arm["name"], seed), args_hash(self.sha, arm["name"], seed, lr, heads)
        if made(self.out, path, h, self.c.overwrite):
            return
        started = time.time()
        _, net, tok, tr = self._train(arm, seed, lr, heads)
        t0 = time.time()
        results = evaluate_fresh(net, tok, self.t["data_seed"], self.c.data_dir)
        key = RunKey(path, arm["name"], seed, lr, heads, h)
        self._write(key, results, tr, started, "confirmation", round(time.time() - t0, 1))

    def plan(self) -> list[tuple]:
        """Every record in order: base, the pilots, then the rounds."""
        steps: list[tuple] = [("base",)]
        steps += [("pilot", name, lr) for name, rates in PILOT.values() for lr in rates]
        steps += [
            ("round", i, seed, arm) for i, seed in enumerate(self.protocol["seeds"]) for arm in self.protocol["arms"]
        ]
        return steps

    def run_all(self) -> dict:
        todo = self.plan()
        with Progress("confirm", len(todo)) as bar:
            pilots: dict[str, float] = {}
            for step in todo:
                if self.c.max_runs and self.made >= self.c.max_runs:
                    break
                if step[0] == "base":
                    self.base()
                elif step[0] == "pilot":
                    self.pilot(step[1], step[2])
                else:
                    pilots = pilots or self.pilot_rates()
                    self.round_run(step[1], step[2], step[3], pilots)
                bar.advance()
        return self.summary(todo)

    def summary(self, todo: list[tuple]) -> dict:
        """``confirmation.json``, table1.json's confirmatory twin: what is made of the plan, the pilots' rates, and
        what the runs cost on this machine (each record's wall clock: training and evaluation)."""
        folder = self.out / protocols.RECORDS
        made_tags = sorted(p.stem for p in folder.glob("*.json") if p.name != "confirmation.json")
        cost = sum(_read(self.out, folder / f"{t}.json").get("wall_s") or 0.0 for t in made_tags)
        pilots_done = all(record_path(self.out, n, lr=lr).exists() for n, rates in PILOT.values() for lr in rates)
        s: dict[str, Any] = {
            "protocol_sha256": self.sha,
            "command": self.command,
            "planned": len(todo),
            "made": made_tags,
            "complete": len(made_tags) == len(todo),
            "pilot_rates": self.pilot_rates() if pilots_done else None,
            "cost": {
                "total_s": round(cost, 1),
                "machine": "wall clock of each run (training and evaluation), 2 CPU cores",
            },
        }
        atomic_json(folder / "confirmation.json", s)
        return {"made": len(made_tags), "planned": len(todo), "cost_s": s["cost"]["total_s"]}


def run(config: Config, command: str | None = None) -> dict:
    """Write the protocol (``--write-protocol``) or make its runs; returns what the folder holds now."""
    c = config
    out = results_io.model_folder(c.results, c.model_name)
    command = command or command_line("confirm", c)
    with records.holding(out):
        if c.write_protocol:
            protocols.write(out, protocols.build(out, model_geometry(c.model_name), time.strftime("%Y-%m-%d")))
            return {"protocol": str(out / protocols.FILE)}
        (out / protocols.RECORDS).mkdir(parents=True, exist_ok=True)
        return Runner(c, out, command).run_all()


def summary(result: dict) -> str:
    """What the command prints."""
    return json.dumps(result)
