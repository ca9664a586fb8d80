"""The signature table: one row per criterion of every account, with its verdict and the numbers behind it.

:func:`rows` reads a ``signatures.json`` (its ``numbers`` and ``verdicts``, decided under the rules' hash it
records) into table rows; :func:`table_text` prints them; :func:`removal_numbers` summarises a removal test
for the rules (the periodic drop, the random draws' percentiles, the paired difference's cluster interval).
"""

from __future__ import annotations

import numpy as np
import torch

from arithmech.accounts.rules import BY_ACCOUNT, RULES, helix_testable, rules_version
from arithmech.core.stats import bootstrap_mean_intervals


def removal_numbers(base: torch.Tensor, r: dict, clusters: list, n_boot: int, seed: int) -> dict:
    """From LD per prompt (clean ``base``; ``r``: ``periodic`` (n,), ``random`` (draws, n), ``full`` (n,)): the mean
    drops, the random draws' 95th percentile and median, and the paired difference periodic minus the mean random
    drop per prompt with its cluster interval."""
    drop_p, drop_r, drop_f = base - r["periodic"], base[None] - r["random"], base - r["full"]
    per_draw = drop_r.mean(1).numpy()
    diff = drop_p - drop_r.mean(0)
    lo, hi = bootstrap_mean_intervals(diff[:, None], n_boot, seed=seed, clusters=clusters)
    return {
        "periodic_drop": float(drop_p.mean()),
        "random_q95": float(np.quantile(per_draw, 0.95)),
        "random_median": float(np.median(per_draw)),
        "random_mean": float(per_draw.mean()),
        "full_drop": float(drop_f.mean()),
        "diff": (float(diff.mean()), float(lo[0]), float(hi[0])),
        "n_random": len(per_draw),
    }


def _iv(x, fmt: str = "{:.2f}") -> str:
    if x is None:
        return "-"
    m, lo, hi = x
    if m is None or (isinstance(m, float) and np.isnan(m)):
        return "-"
    return f"{fmt.format(m)} [{fmt.format(lo)}, {fmt.format(hi)}]"


def evidence(n: dict) -> dict[str, str]:
    """Per criterion, the numbers that decided it, in words."""
    cr = n["class_rate"]
    probes = [p for p in n["probes"] if p["testable"]]
    best = max(probes, key=lambda p: p["kappa"] - p["null_quantile"]) if probes else None
    rm, ra, sub = n["removal_mlp"], n["removal_attn"], n.get("subspace") or {}
    par = n["parity"]
    k = n["b1_k"]
    share = "-" if k is None else f"{k / n['width']:.1%}"
    return {
        "H1": f"{n['key_heads']} key head(s); studied: {', '.join(n['heads_studied']) or '-'} ({n['heads_from']})",
        "H2": f"MLPs {', '.join(map(str, n['flagged_mlps']))}: ratio {_iv(n['rho_mlp'])}; operand effect "
        f"{_iv(n['den_mlp'])} logits; {n['clusters_cf']} operand pairs",
        "H3": f"heads: ratio {_iv(n['rho_heads'])}; operand effect {_iv(n['den_heads'])} logits",
        "B1": f"smallest faithful k = {k if k is not None else 'none'} of {n['width']} "
        f"({share}); ablating all moves LD by {n['f_denominator']:.2f} "
        f"(clean {n['ld_clean']:.2f}); attribution vs exact r = {par['r_pairs']:.2f} ({par['n_neurons']} neurons x "
        f"{par['n_prompts']} prompts)",
        "B2": f"{cr[0]:.0%} [{cr[1]:.0%}, {cr[2]:.0%}] of {n['top_k'] * len(n['flagged_mlps'])} top neurons "
        f"classified; permuted grids {n['null_rate']:.1%}",
        "B3": f"associated minus unassociated drop {_iv(n['assoc_diff'])} ({n['assoc_prompts']} prompts, "
        f"{n['assoc_clusters']} pairs; {n.get('mean_associated', 0):.1f} associated neurons a prompt)",
        "B/F": f"periodic fit wins {_iv(n['periodic_wins'])} of fitted neurons; periodic rate "
        f"{n['periodic_rate']:.0%} (permuted {n['periodic_null_rate']:.1%})",
        "F1": "no testable probe"
        if best is None
        else f"best: {best['x']} mod {best['T']} kappa {best['kappa']:.2f} "
        f"(layer {best['layer']}) vs null {best['null_quantile']:.2f}; "
        + ", ".join(f"{p['x']} mod {p['T']} {p['kappa']:.2f}/{p['null_quantile']:.2f}" for p in probes),
        "F2": f"periodic share: MLPs {n['spectrum_mlp']:.2f}, heads {n['spectrum_attn']:.2f}, digit frequency "
        f"{n['spectrum_baseline']:.2f}, isotropic {n['spectrum_isotropic']:.2f}",
        "F3": f"MLP drop: periodic {rm['periodic_drop']:.2f}, random q95 {rm['random_q95']:.2f} "
        f"({rm['n_random']} draws), whole subspace {rm['full_drop']:.2f}; paired diff {_iv(rm['diff'])}",
        "F3-attn": f"attention drop: periodic {ra['periodic_drop']:.2f}, random q95 {ra['random_q95']:.2f}, whole "
        f"{ra['full_drop']:.2f}; paired diff {_iv(ra['diff'])}",
        "D1": helix_evidence(n.get("helix"), n["operand_values"]),
        "D2": "-"
        if not sub
        else f"{sub['dim']}-dim share {_iv(sub['ratio'])} of top-neuron ablation {_iv(sub['all'])}",
        "D3": "needs D1's helix",
    }


def helix_evidence(h: dict | None, values: int) -> str:
    """D1's numbers in words: why it is not testable, or the helix against each control over the live layers."""
    if h is None:
        return f"{values} operand values (the one-digit grid; no two-digit grid was run): helix not identifiable"
    why = helix_testable(h)
    if why:
        return f"{h['template']}: {why}"
    head = f"{h['template']}, {h['answered']} of {h['cells']} cells answered ({h['share'][0]:.1%})"
    live = [h["layers"][i] for i in h["live_layers"]]
    rec = {m: np.mean([h["recovered"][m][i] for i in h["live_layers"]]) for m in ("helix", "pca", "shuffled", "poly")}
    return (
        f"{head}; layers {', '.join(map(str, live))}: share of the full patch recovered, helix {rec['helix']:.2f}, "
        f"PCA {rec['pca']:.2f}, shuffled {rec['shuffled']:.2f}, polynomial {rec['poly']:.2f}; helix minus PCA "
        f"{_iv(h['vs_pca'])}, shuffled {_iv(h['vs_shuffled'])}, polynomial {_iv(h['vs_poly'])} logits; "
        f"ones-digit lookup (descriptive) {_iv(h['vs_digit'])}"
    )


def rows(sig: dict) -> list[dict]:
    """One row per criterion: account, criterion, deciding or descriptive, verdict, evidence, and the account's
    verdict."""
    ev, out = evidence(sig["numbers"]), []
    for rule in RULES:
        v = sig["verdicts"][rule.account]
        for crit in rule.criteria:
            out.append(
                {
                    "account": f"{rule.account}: {rule.name}",
                    "account verdict": v["verdict"],
                    "criterion": crit.id,
                    "decides": "yes" if crit.decides else "describes",
                    "verdict": v["criteria"][crit.id],
                    "evidence": ev[crit.id],
                }
            )
    return out


def table_text(sig: dict) -> str:
    """The table as text for the command line."""
    ver = rules_version(sig["rules_sha256"])
    lines = [f"{sig['model']}: signatures under rules {'v' + str(ver) + ' ' if ver else ''}{sig['rules_sha256'][:12]}"]
    for a, v in sig["verdicts"].items():
        lines.append(f"{a} ({BY_ACCOUNT[a].name}): {v['verdict']}")
    for r in rows(sig):
        lines.append(f"  {r['criterion']:8s} {r['verdict']:13s} {r['evidence']}")
    return "\n".join(lines)
