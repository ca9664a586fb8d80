"""``python -m arithmech confirm``: the protocol's runs, on fresh seeds, resumable.

``--write-protocol`` writes ``<model>/confirmation/protocol.json`` (:mod:`arithmech.table1.protocol`) and stops; it
is committed before the first run (a test reads git's history). Without it, the runner reads the protocol and
makes every run it plans, in rounds — round ``i`` trains each arm at seed ``seeds[i]`` — so a run stopped part-way
leaves every arm with the same number of seeds. Each run is one record, ``confirmation/<arm>-s<seed>.json``, written
whole (a crash leaves the record or nothing); its ``parameters`` say ``phase: confirmation`` and the protocol's
sha256, and a record made with the same arguments is kept (resume). ``--max-runs`` stops after that many new
runs, so a session commits what it made and the next one resumes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from types import SimpleNamespace

from arithmech.core import provenance, records, safe_read
from arithmech.core import results as results_io
from arithmech.core.atomic import atomic_json
from arithmech.core.config import command_line
from arithmech.core.inputs import quoted
from arithmech.core.progress import Progress
from arithmech.data.splits import plain_items
from arithmech.evals.suites import get_suite
from arithmech.steps.config_training import Confirm as Config
from arithmech.steps.finetune_heads import model_geometry
from arithmech.steps.table1_train import train_arm
from arithmech.table1 import protocol as protocols
from arithmech.table1.protocol import record_path


def heads_of(protocol: dict, arm: dict, i: int) -> list[list[int]] | None:
    """The heads ``arm`` tunes at the protocol's ``i``-th seed (None: every parameter)."""
    if arm["mode"] == "full":
        return None
    return protocol["heads"]["key"] if arm["heads"] == "key" else protocol["heads"][arm["name"]][i]


def args_hash(protocol_sha: str, arm: dict, seed: int, heads) -> str:
    """What a record was made with: the protocol, the arm, the seed, the heads."""
    text = json.dumps({"protocol": protocol_sha, "arm": arm, "seed": seed, "heads": heads}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def made(folder: Path, arm: str, seed: int, h: str, overwrite: bool) -> bool:
    """Whether the run's record exists with the same arguments; a record made otherwise is refused unless
    ``overwrite`` (it would be replaced)."""
    path = record_path(folder, arm, seed)
    if not path.exists():
        return False
    rec = json.loads(safe_read.read_text(path, folder))
    if rec.get("parameters", {}).get("args_sha256") == h:
        return True
    if not overwrite:
        raise ValueError(f"{quoted(path)} was made with other arguments: --overwrite replaces it")
    return False


def _train_and_score(c: Config, protocol: dict, arm: dict, seed: int, heads) -> tuple[dict, dict]:
    """Train one run as the exploration did (:func:`arithmech.steps.table1_train.train_arm`) and score its test."""
    t = protocol["training"]
    suite = get_suite("cpu")
    if arm["train"] == "plain":
        suite = dataclasses.replace(
            suite, train=lambda n, seed=0, data_seed=0: [(p, " " + a) for p, a in plain_items(n, data_seed, seed)]
        )
    tc = SimpleNamespace(model_name=c.model_name, device=c.device, dtype=c.dtype, batch_size=t["batch_size"])
    kv = arm["kv_policy"] or "any"
    net, tok, tr = train_arm(tc, suite, heads, arm["lr"], seed, t["steps"], t["data_seed"], kv)  # type: ignore[arg-type]
    t0 = time.time()
    test = suite.evaluate(net, tok, "test", t["sizes"], t["data_seed"], data_dir=c.data_dir)
    return test, {**tr, "eval_s": round(time.time() - t0, 1)}


def run(config: Config, command: str | None = None) -> dict:
    """Write the protocol (``--write-protocol``) or make its runs; returns what the folder holds now."""
    c = config
    out = results_io.model_folder(c.results, c.model_name)
    command = command or command_line("confirm", c)
    with records.holding(out):
        if c.write_protocol:
            protocols.write(out, protocols.build(out, model_geometry(c.model_name), time.strftime("%Y-%m-%d")))
            return {"protocol": str(out / protocols.FILE)}
        protocol = protocols.read(out)
        sha = safe_read.sha256(out / protocols.FILE, out)
        plan = [(i, seed, arm) for i, seed in enumerate(protocol["seeds"]) for arm in protocol["arms"]]
        todo = [
            (i, seed, arm)
            for i, seed, arm in plan
            if not made(out, arm["name"], seed, args_hash(sha, arm, seed, heads_of(protocol, arm, i)), c.overwrite)
        ]
        todo = todo[: c.max_runs] if c.max_runs else todo
        with Progress("confirm", len(todo)) as bar:
            for i, seed, arm in todo:
                heads = heads_of(protocol, arm, i)
                bar.note = f"{arm['name']} seed {seed}"
                started = time.time()
                test, tr = _train_and_score(c, protocol, arm, seed, heads)
                rec = records.finetune_record(
                    model=protocol["model"],
                    mode=arm["mode"],
                    tag=f"{arm['name']}-s{seed}",
                    command=command,
                    seed=seed,
                    device=c.device,
                    dtype=c.dtype,
                    heads=heads if heads is not None else "all",
                    mlps=[] if arm["mode"] == "precise" else "all",
                    tuned_parameters=tr.get("tuned_parameters", 0),
                    total_parameters=tr.get("total_parameters"),
                    parameters={
                        "phase": "confirmation",
                        "protocol_sha256": sha,
                        "arm": arm["name"],
                        "lr": arm["lr"],
                        "kv_policy": arm["kv_policy"],
                        "train_data": arm["train"],
                        "args_sha256": args_hash(sha, arm, seed, heads),
                        "eval_s": tr.pop("eval_s"),
                    },
                    train=tr,
                    results=test,
                    versions=provenance.versions(),
                    wall_s=round(time.time() - started, 1),
                )
                atomic_json(record_path(out, arm["name"], seed), rec)
                bar.advance()
        return write_summary(out, protocol, sha, plan, command)


def write_summary(out: Path, protocol: dict, sha: str, plan: list, command: str) -> dict:
    """``confirmation/confirmation.json``, table1.json's confirmatory twin: the runs made and planned, and what they
    cost on this machine (each record's wall clock: training and test)."""
    made_tags, cost = [], 0.0
    for _, seed, arm in plan:
        path = record_path(out, arm["name"], seed)
        if path.exists():
            made_tags.append(path.stem)
            cost += json.loads(safe_read.read_text(path, out)).get("wall_s") or 0.0
    summary = {
        "protocol_sha256": sha,
        "command": command,
        "planned": len(plan),
        "made": made_tags,
        "complete": len(made_tags) == len(plan),
        "cost": {"total_s": round(cost, 1), "machine": "wall clock of each run (training and test), 2 CPU cores"},
    }
    atomic_json(out / "confirmation" / "confirmation.json", summary)
    return {"made": len(made_tags), "planned": len(plan), "cost_s": summary["cost"]["total_s"]}


def summary(result: dict) -> str:
    """What the command prints."""
    return json.dumps(result)
