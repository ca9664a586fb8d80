"""The accounts step end to end (``python -m arithmech accounts``): grid, atlas, Fourier tests, counterfactuals, the
signature table; files in ``<results>/<model>/accounts/``, each written atomically.

It reads identify's files of the model's folder (``key_heads.json``, ``effects.csv``: the flagged MLPs and the
studied heads; ``run.json``: identify's shots) and writes ``signatures.json`` (the numbers, the verdicts under the
rules' hash, the command, timings), ``neurons.csv``, ``maps.csv``, ``faithfulness.csv``, ``parity.csv``,
``removal.csv``, ``probe.csv`` and ``counterfactual.csv``. With ``--two-digit <id>-2d`` it also runs rule D1's
two-digit grid, helix fits and patches (:mod:`arithmech.accounts.twodigit`), their numbers in ``signatures.json``
(``helix``). **Resumable**: each phase's result is kept in ``<model>/.checkpoints/accounts/`` under the config's
key, so a run stopped part-way starts at the phase it was in.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from arithmech.accounts import ablate, atlas, classify, fourier, grid, signatures, twodigit
from arithmech.accounts import counterfactual as cf
from arithmech.accounts.config import Accounts as Config
from arithmech.accounts.result import FILES, Result, folder_of, read
from arithmech.accounts.rules import PROBE_ALPHA, decide, rules_sha256
from arithmech.accounts.runner import Runner
from arithmech.core import provenance, results
from arithmech.core.atomic import atomic_json, atomic_write
from arithmech.core.config import command_line
from arithmech.core.models import load_model
from arithmech.core.progress import announce
from arithmech.embedded.train import corpus
from arithmech.identify.config import Identify
from arithmech.identify.result import load_key_heads


def needs(config: Config) -> tuple[str, Identify]:
    """identify's ``key_heads.json``, and the identify config that makes it where it is absent."""
    return "key_heads.json", Identify(
        model_name=config.model_name, results=config.results, seed=config.seed, device=config.device, dtype=config.dtype
    )


def flagged_layers(folder: Path, max_layers: int) -> list[int]:
    """identify's key MLPs, then the other MLPs by effect (most negative first) on its pooled task, ``max_layers``
    in all."""
    kh = results.read(folder, "key_heads.json")
    eff = results.read(folder, "effects.csv")
    mlps = eff[(eff.task == kh["task"]) & (eff["head"].astype(str) == "mlp")].sort_values("effect")
    order = [int(m["layer"]) for m in kh.get("mlps", [])] + [int(x) for x in mlps.layer]
    return list(dict.fromkeys(order))[:max_layers]


def shots_of(config: Config, folder: Path) -> int:
    """The solved examples before each prompt: the config's, or identify's (``run.json``) at -1."""
    if config.shots >= 0:
        return config.shots
    rec = json.loads((folder / "run.json").read_text()) if (folder / "run.json").exists() else {}
    return int(rec.get("steps", {}).get("identify", {}).get("parameters", {}).get("shots", 0))


class Phases:
    """Each phase's result, kept under the config's key in the model's checkpoint folder (resumable)."""

    def __init__(self, folder: Path, config: Config):
        key = json.dumps({**config.reuse_key(), "rules": rules_sha256()}, sort_keys=True, default=str)
        self.dir = folder / ".checkpoints" / "accounts" / hashlib.sha256(key.encode()).hexdigest()[:16]
        self.timings: dict[str, float] = {}

    def __call__(self, name: str, fn: Callable[[], Any]) -> Any:
        path = self.dir / f"{name}.pt"
        if path.exists():
            self.timings[name] = 0.0
            return torch.load(path, weights_only=False)
        t0 = time.time()
        announce("accounts", name)
        out = fn()
        buf = io.BytesIO()
        torch.save(out, buf)
        atomic_write(path, buf.getvalue())
        self.timings[name] = round(time.time() - t0, 1)
        return out


def compute(config: Config, **loaded) -> Path:
    """The step (module docstring); ``loaded``: ``model`` and ``tok`` already in memory. Returns the folder."""
    c = config
    folder = results.model_folder(c.results, c.model_name)
    out_dir = folder / "accounts"
    if (out_dir / "signatures.json").exists() and not c.overwrite:
        raise ValueError(f"{out_dir}/signatures.json exists: pass --overwrite to replace it")
    layers, (heads, heads_from) = flagged_layers(folder, c.max_layers), load_key_heads(folder)
    n_key = len(results.read(folder, "key_heads.json")["heads"])
    shots = shots_of(c, folder)
    t_start = time.time()
    g = _grid(c, loaded, Phases(folder, c), shots)
    model, samples, ph, runner = g.model, g.samples, g.ph, g.runner
    clean = ph("clean", lambda: runner.clean(layers))
    mu, attr, scores = atlas.attribution(clean)
    order = atlas.ranking(scores)
    top = {l: o[: c.top_k] for l, o in order.items()}
    rng = np.random.default_rng(c.seed)
    sub, sub_runner, par_rows, par_runner = _subsets(g, rng)
    parity_df, parity = ph(
        "parity", lambda: atlas.parity(par_runner, par_rows, attr, order, mu, c.parity_neurons, c.seed)
    )
    m, ids = atlas.maps(samples, clean.acts, top, grid.OPERANDS)
    cls = ph("classify", lambda: classify.classify(m, grid.OPERANDS, c.seed, c.n_perm))
    neurons = atlas.neuron_table(ids, scores, cls, m)
    width = next(iter(mu.values())).shape[0]
    faith_df, faith = ph("faithfulness", lambda: atlas.faithful(sub_runner, order, mu, width))
    assoc = ph(
        "association",
        lambda: atlas.associated_vs_unassociated(sub_runner, sub, ids, cls, grid.OPERANDS, mu, c.seed, c.n_boot),
    )
    subspace = ph(
        "subspace", lambda: atlas.shared_subspace(model, sub_runner, clean.acts, top, mu, sub, c.seed, c.n_boot)
    )
    base_ld, removal, probes, digit_numbers = _digit_tests(g, sub_runner, sub, clean)
    counter = _counterfactual(g, rng, heads, layers)
    two = None if c.two_digit == "none" else ph("helix", lambda: twodigit.run(model, g.tok, c, shots, g.digits))
    numbers = {
        **_studied(n_key, heads, heads_from, layers, shots),
        "n_grid": len(samples),
        "grid_accuracy": float((clean.logits.argmax(1) == runner.answer).float().mean()),
        "ld_clean": float(base_ld.mean()),
        **{k: counter[k] for k in ("clusters_cf", "rho_mlp", "rho_heads", "den_mlp", "den_heads")},
        "cf_groups": counter["groups"],
        **faith,
        "top_k": c.top_k,
        **_class_numbers(cls, neurons, assoc, c),
        "parity": parity,
        **digit_numbers,
        "operand_values": len(grid.OPERANDS) if two is None else two["values"],
        "digit_tokens": True,
        "subspace": subspace,
        "helix": two,
    }
    seconds = round(time.time() - t_start, 1)
    write_files(
        out_dir, c, numbers, neurons, m, ids, faith_df, parity_df, removal, base_ld, probes, counter, ph, seconds
    )
    return out_dir


@dataclass(frozen=True)
class _Grid:
    """The grid a run studies and what runs on it: the config, the model, the grid's prompts and digit tokens,
    the checkpointed phases and a runner of the whole grid."""

    c: Config
    model: Any
    tok: Any
    samples: list
    digits: list[int]
    ph: Phases
    runner: Runner


def _grid(c: Config, loaded: dict, ph: Phases, shots: int) -> _Grid:
    """The model (``loaded``'s, else loaded as the config says, on ``c.threads`` threads when set), the addition
    grid's prompts (``add-`` templates only unless ``c.templates == "all"``) and what runs on them."""
    if c.threads:
        torch.set_num_threads(c.threads)
    model, tok = loaded.get("model"), loaded.get("tok")
    if model is None:
        model, tok, _ = load_model(c.model_name, device=c.device, dtype=c.dtype)
    grid_prompts = grid.grid_prompts(tok, "addition", shots, c.seed)
    samples = [s for s in grid_prompts if c.templates == "all" or s.template.startswith("add-")]
    digits = grid.digit_ids(tok)
    return _Grid(c, model, tok, samples, digits, ph, Runner(model, tok, samples, digits, c.batch_size))


def _digit_tests(g: _Grid, sub_runner: Runner, sub: list, clean) -> tuple:
    """The tests in the digits' Fourier basis (periodic directions removed from each site against random ones, the
    probes, the digits' corpus frequency, the spectra): ``(base_ld, removal, probes, numbers)``, the subset's clean
    logit difference, the removal's and the probes' results and their numbers (``probes`` to ``removal_attn``)."""
    c = g.c
    b = fourier.digit_basis(g.model, g.runner.arch, g.digits)
    base_ld = sub_runner.ld()
    removal = {site: g.ph(f"removal-{site}", remover(sub_runner, b, site, c)) for site in ("mlp", "attn")}
    probes = g.ph("probe", lambda: run_probes(clean, g.samples, c))
    freq = g.ph("frequency", lambda: digit_frequency(g.model, g.tok, c.model_name, g.digits, c.seed))
    numbers = {
        "probes": probes["summary"],
        **_spectrum(clean, b, freq),
        "digit_frequency": freq.tolist(),
        **_removal_numbers(base_ld, removal, [(s.a, s.b) for s in sub], c),
    }
    return base_ld, removal, probes, numbers


def _counterfactual(g: _Grid, rng: np.random.Generator, heads: list, layers: list[int]) -> dict:
    """The counterfactual phase: studied heads against flagged MLPs on ``n_cf`` grid prompts drawn by ``rng``."""
    c, samples = g.c, g.samples
    cf_samples = [samples[r] for r in sorted(rng.permutation(len(samples))[: c.n_cf].tolist())]
    return g.ph(
        "counterfactual", lambda: cf.compare(g.model, g.tok, cf_samples, heads, layers, c.seed, c.n_boot, c.batch_size)
    )


def _studied(n_key: int, heads: list, heads_from: str, layers: list[int], shots: int) -> dict:
    """The signature's first numbers, what identify's files gave: key heads, studied heads, flagged MLPs, shots."""
    return {
        "key_heads": n_key,
        "heads_studied": [f"{l}.{h}" for l, h in heads],
        "heads_from": heads_from,
        "flagged_mlps": layers,
        "shots": shots,
    }


def _subsets(g: _Grid, rng: np.random.Generator) -> tuple:
    """``(sub, sub_runner, par_rows, par_runner)``: the ``n_intervene`` prompts the interventions run on, drawn by
    ``rng`` (in grid order), and the first ``n_parity`` of them for the parity test; each with its runner."""
    c, samples = g.c, g.samples
    rows = sorted(rng.permutation(len(samples))[: c.n_intervene].tolist())
    sub = [samples[r] for r in rows]
    sub_runner = Runner(g.model, g.tok, sub, g.digits, c.batch_size)
    par_rows = rows[: c.n_parity]
    par_runner = Runner(g.model, g.tok, [samples[r] for r in par_rows], g.digits, c.batch_size)
    return sub, sub_runner, par_rows, par_runner


def _class_numbers(cls, neurons: pd.DataFrame, assoc: dict, c: Config) -> dict:
    """The neurons' classes in numbers: the rate each class is found at against its null, the associated against
    the unassociated neurons' effects, and how often the periodic fit wins."""
    return {
        "class_rate": atlas.class_rate(cls),
        "null_rate": cls.null_heuristic,
        "periodic_rate": float((cls.periodic.r2_heldout >= 0.3).mean()),
        "periodic_null_rate": cls.null_periodic,
        "classes": neurons["class"].value_counts().to_dict(),
        **{k: v for k, v in assoc.items() if k != "n"},
        "assoc_prompts": assoc["n"],
        "periodic_wins": atlas.periodic_wins(cls, c.n_boot, c.seed),
    }


def _removal_numbers(base_ld: torch.Tensor, removal: dict, clusters: list, c: Config) -> dict:
    """What removing the digit subspace from each site (``mlp``, ``attn``) does to the logit difference, with
    intervals over the operand clusters."""
    rem = {site: signatures.removal_numbers(base_ld, r, clusters, c.n_boot, c.seed) for site, r in removal.items()}
    return {"clusters_removal": len(set(clusters)), "removal_mlp": rem["mlp"], "removal_attn": rem["attn"]}


def _spectrum(clean, b: torch.Tensor, freq: np.ndarray) -> dict:
    """The periodic share of the MLPs' and the heads' summed outputs in the digit basis, against the digits'
    own frequency in the corpus and an isotropic direction."""
    return {
        "spectrum_mlp": fourier.periodic_share((clean.mlp_sum @ b.T).numpy()),
        "spectrum_attn": fourier.periodic_share((clean.attn_sum @ b.T).numpy()),
        "spectrum_baseline": fourier.periodic_share(freq[None]),
        "spectrum_isotropic": fourier.ISOTROPIC_SHARE,
    }


def remover(runner: Runner, b: torch.Tensor, site: str, c: Config) -> Callable[[], dict]:
    """The periodic-against-random removal on ``site``, as a phase."""
    return lambda: ablate.periodic_and_random(runner, b, site, c.n_random, c.seed)


def probe_layers(n_layers: int, k: int) -> list[int]:
    """``k`` layers evenly spaced over ``n_layers``, the last included."""
    return sorted({int(round(x)) for x in np.linspace(n_layers - 1, 0, k)}) if k < n_layers else list(range(n_layers))


def run_probes(clean, samples, c: Config) -> dict:
    """The residue probes of ``a`` (at its token) and ``a + b`` (at END), every period, with the corrected nulls, on
    ``c.probe_rows`` prompts and ``c.probe_layers`` layers."""
    rows = np.sort(np.random.default_rng(c.seed + 11).permutation(len(samples))[: c.probe_rows])
    layers = probe_layers(clean.resid_end.shape[1], c.probe_layers)
    a = np.array([samples[r].a for r in rows])
    s_ = a + np.array([samples[r].b for r in rows])
    raw = []
    for x, feats, values in (("a", clean.resid_a, a), ("a+b", clean.resid_end, s_)):
        f = feats[rows][:, layers].numpy()
        for T in fourier.PERIODS:
            r = fourier.residue_probe(f, values, T, c.seed, c.n_perm)
            raw.append({"x": x, "T": T, "layers": layers, **r})
    m = max(1, sum(r["testable"] for r in raw))
    summary = []
    for r in raw:
        k = np.array(r["kappa"]) if r["testable"] else np.array([np.nan])
        summary.append(
            {
                "x": r["x"],
                "T": r["T"],
                "testable": r["testable"],
                "kappa": float(np.nanmax(k)) if r["testable"] else None,
                "layer": r["layers"][int(np.nanargmax(k))] if r["testable"] else None,
                "null_quantile": float(np.quantile(r["null"], 1 - PROBE_ALPHA / m)) if r["testable"] else None,
                "heldout_values": r["heldout_values"],
            }
        )
    return {"raw": raw, "summary": summary}


def digit_frequency(model, tok, model_name: str, digits: list[int], seed: int) -> np.ndarray:
    """The digit-token frequency baseline: the toy's training stream, or for another model text it samples from
    its first token (16 sequences of 96 tokens, seeded)."""
    if model_name == "embedded":
        ids = [i for text in corpus(random.Random(seed), 2000) for i in tok(text)["input_ids"]]
    else:
        torch.manual_seed(seed)
        start = torch.full((16, 1), tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id)
        gen = model.generate(start, do_sample=True, max_new_tokens=96, pad_token_id=tok.eos_token_id)
        ids = gen.flatten().tolist()
    return fourier.digit_frequencies(ids, digits) / max(1, len(ids))


def write_files(  # noqa: PLR0913 (every file of the step, written together; a Result type would carry them)
    out_dir, c, numbers, neurons, m, ids, faith_df, parity_df, removal, base_ld, probes, counter, ph, wall
) -> None:
    """Every file of the step, each atomically; ``signatures.json`` last (its presence means the set is whole)."""
    ab = classify.cells(grid.OPERANDS)
    maps_df = pd.DataFrame(
        [
            {"neuron": f"{l}.{i}", "a": int(a), "b": int(b_), "activation": float(m[j, k])}
            for j, (l, i) in enumerate(ids)
            for k, (a, b_) in enumerate(ab)
        ]
    )
    rem = []
    for site, r in removal.items():
        rem.append({"site": site, "condition": "periodic", "drop": float((base_ld - r["periodic"]).mean())})
        rem.append({"site": site, "condition": "full", "drop": float((base_ld - r["full"]).mean())})
        rem += [
            {"site": site, "condition": f"random {i}", "drop": float((base_ld - x).mean())}
            for i, x in enumerate(r["random"])
        ]
    probe_df = pd.DataFrame(
        [
            {"x": r["x"], "T": r["T"], "layer": l, "kappa": k}
            for r in probes["raw"]
            if r["testable"]
            for l, k in zip(r["layers"], r["kappa"])
        ]
    )
    frames = {
        "neurons.csv": neurons,
        "maps.csv": maps_df,
        "faithfulness.csv": faith_df,
        "parity.csv": parity_df,
        "removal.csv": pd.DataFrame(rem),
        "probe.csv": probe_df,
        "counterfactual.csv": pd.DataFrame(counter["rows"]),
    }
    for name, df in frames.items():
        atomic_write(out_dir / name, df.to_csv(index=False, float_format="%.6g"))
    atomic_json(
        out_dir / "signatures.json",
        {
            "model": c.model_name,
            "rules_sha256": rules_sha256(),
            "command": command_line("accounts", c),
            "parameters": {k: v for k, v in c.reuse_key().items()},
            "verdicts": decide(numbers),
            "numbers": numbers,
            "timings_s": {**ph.timings, "total": wall},
            "versions": provenance.versions(),
        },
    )


def run(config: Config, **loaded) -> Result:
    """The step, then its files read back."""
    return read(compute(config, **loaded), config)


def summary(result: Result) -> str:
    """The signature table and where the files are."""
    return signatures.table_text(result.signatures) + f"\nwrote {folder_of(result.config)}/: {', '.join(FILES)}"
