"""The "Three accounts" chapter's page: every table and chart of ``book/accounts.md``, one call per cell.

:func:`run` makes (or reuses) the accounts step of the chapter's model (the toy, computed in the build) and reads the
shipped results of the other models (SmolLM2's, made by the command in their ``signatures.json``); every other
function takes its dict ``r`` (model name -> :class:`arithmech.accounts.result.Result`) and returns what its cell
shows::

    >>> r = run(P)
    >>> verdicts(r); table(r); explorer(r, "embedded")
"""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from arithmech.accounts import charts, result, signatures
from arithmech.accounts import run as step
from arithmech.accounts.config import Chapter
from arithmech.accounts.rules import EARLIER_SHA256, RULES, decide, rules_sha256, rules_version
from arithmech.core import results
from arithmech.core.names import components
from arithmech.pipeline.ensure import ensure

Runs = dict[str, result.Result]
"""Each model's accounts files, read: model name → its :class:`~arithmech.accounts.result.Result` (what :func:`run`
returns and every table and chart of the page takes)."""


def reusable(config) -> bool:
    """Whether the step's files of ``config``'s model were made with its parameters under the current rules."""
    sig = result.stored_signatures(config)
    if sig is None:
        return False
    return sig.get("rules_sha256") == rules_sha256() and sig.get("parameters") == json.loads(
        json.dumps(config.reuse_key(), default=str)
    )


def stale_note(sig: dict) -> str:
    """ "" under the current rules; a note that an earlier version decided the results, naming it and the current
    one, and saying whether the current rules give their numbers the same verdicts (the criteria's reasons and texts
    shown are the current version's, not the one that decided the file)."""
    if sig.get("rules_sha256") == rules_sha256():
        return ""
    if sig.get("rules_sha256") in EARLIER_SHA256 and decide(sig["numbers"]) == sig["verdicts"]:
        then, now = rules_version(sig["rules_sha256"]), rules_version(rules_sha256())
        return (
            f" Decided under version {then} of the rules; version {now}, the current one, gives its numbers the same "
            f"verdicts (the reasons and criteria shown are version {now}'s)."
        )
    return " The results predate the current rules."


def run(P: Chapter) -> Runs:
    """The chapter's model computed (or reused), then every shipped model read: ``{model: Result}``."""
    own = P.to_accounts().replace(overwrite=True)
    needed, identify = step.needs(own)
    if not results.exists(results.model_folder(P.results, P.model_name), needed):
        ensure(identify)  # identify's files, where the Identify chapter has not made them
    kept = None if P.recompute or not reusable(own) else result.stored(own)
    out = {P.model_name: kept if kept is not None else step.run(own)}
    for m in P.shipped:
        if (got := result.stored(P.to_accounts(m))) is not None:
            out[m] = got
    return out


def header(r: Runs) -> str:
    """One line per model: the grid, the flagged MLPs, the studied heads, the run's cost."""
    lines = []
    for m, res in r.items():
        n = res.signatures["numbers"]
        lines.append(
            f"{m}: {n['n_grid']} grid prompts ({n['shots']} shots; answer digit right on {n['grid_accuracy']:.0%}), "
            f"flagged {components(f'MLP {i}' for i in n['flagged_mlps'])}, "
            f"heads studied {components(n['heads_studied'])} "
            f"({n['heads_from']}); {res.signatures['timings_s']['total']:.0f} s"
        )
    return "\n".join(lines)


def verdicts(r: Runs) -> pd.DataFrame:
    """Accounts x models: each account's verdict."""
    rows = []
    for rule in RULES:
        row = {"account": f"{rule.account}: {rule.name}"}
        for m, res in r.items():
            row[m] = res.signatures["verdicts"][rule.account]["verdict"]
        rows.append(row)
    return pd.DataFrame(rows)


def table(r: Runs) -> pd.DataFrame:
    """The signature table: one row per criterion and model, its verdict and the numbers behind it."""
    out = []
    for m, res in r.items():
        out += [{"model": m, **row} for row in signatures.rows(res.signatures)]
    return pd.DataFrame(out)[["model", "criterion", "decides", "verdict", "evidence"]]


def rules_text() -> str:
    """The rules as Markdown: each account's criteria and when each is not testable."""
    lines = []
    for rule in RULES:
        lines.append(f"**{rule.account}: {rule.name}** ({rule.sources}): {rule.meaning}.")
        for c in rule.criteria:
            nt = f" *Not testable when* {c.not_testable}." if c.not_testable else ""
            lines.append(f"- {c.id}{'' if c.decides else ' (describes)'}: {c.text}.{nt}")
        lines.append("")
    return "\n".join(lines)


def explorer(r: Runs, model: str) -> None:
    """The interactive heatmap explorer of ``model``'s top neurons: one chart per flagged MLP, displayed."""
    from IPython.display import display  # lazy: the book extra (a kernel)

    for chart in charts.neuron_explorers(r[model].neurons, r[model].maps, model):
        display(chart)


def classes(r: Runs) -> pd.DataFrame:
    """Per model, how many top neurons fall in each heuristic class (held-out R^2 >= the rule's)."""
    rows = [
        {"model": m, "class": k, "neurons": int(v)}
        for m, res in r.items()
        for k, v in res.neurons["class"].value_counts().items()
    ]
    return pd.DataFrame(rows).pivot_table(index="class", columns="model", values="neurons", fill_value=0).reset_index()


def _stack(r: Runs, field: str) -> pd.DataFrame:
    return pd.concat([getattr(res, field).assign(model=m) for m, res in r.items()], ignore_index=True)


def faithfulness_chart(r: Runs) -> alt.Chart:
    return charts.faithfulness_chart(_stack(r, "faithfulness"))


def parity(r: Runs) -> pd.DataFrame:
    """Attribution against exact single-neuron patching, per model."""
    rows = []
    for m, res in r.items():
        p = res.signatures["numbers"]["parity"]
        rows.append(
            {
                "model": m,
                "r (neuron x prompt)": p["r_pairs"],
                "r (neuron means)": p["r_neurons"],
                "same sign": p["sign_agreement"],
                "neurons": p["n_neurons"],
                "prompts": p["n_prompts"],
            }
        )
    return pd.DataFrame(rows)


def removal_chart(r: Runs) -> alt.Chart:
    return charts.removal_chart(_stack(r, "removal"))


def probe_chart(r: Runs) -> alt.Chart | alt.FacetChart:
    nulls = pd.DataFrame(
        [{**p, "model": m} for m, res in r.items() for p in res.signatures["numbers"]["probes"] if p["testable"]]
    )
    return charts.probe_chart(_stack(r, "probe"), nulls)


def probes(r: Runs) -> pd.DataFrame:
    """Every probe: testable or not, the best layer's kappa, the corrected null quantile, the held-out values."""
    rows = [
        {
            "model": m,
            **p,
            "testable": "yes" if p["testable"] else "no",
            "heldout_values": ", ".join(map(str, p["heldout_values"])) or "—",
        }
        for m, res in r.items()
        for p in res.signatures["numbers"]["probes"]
    ]
    return pd.DataFrame(rows).fillna("—")


def counterfactual_chart(r: Runs) -> alt.Chart:
    rows = []
    for m, res in r.items():
        for key, g in res.signatures["numbers"]["cf_groups"].items():
            kind, group = key.split("/")
            rows.append({"model": m, "counterfactual": kind, "group": group, **g})
    return charts.counterfactual_chart(pd.DataFrame(rows))


def commands(r: Runs) -> str:
    """The command that made each model's files."""
    return "\n".join(f"{m}: {res.signatures['command']}" for m, res in r.items())


def findings_box(got: result.Result | None, label: str, evidence: bool = True) -> list[str]:
    """The introduction's box for a model's accounts files ``got`` (``results/<model>/accounts/``, read): each
    account's verdict and its criteria, scored by :mod:`arithmech.accounts.rules` — signatures, not the paper's
    claims, so the box stands apart from theirs; ``[]`` where the model has no accounts results. ``evidence``
    False (a model with no ground truth to test) says the verdicts check the machinery only."""
    if got is None:
        return []
    sig = got.signatures
    rows = [
        f"| {rule.account}: {rule.name} | **{sig['verdicts'][rule.account]['verdict']}** | "
        + ", ".join(f"{k} {v}" for k, v in sig["verdicts"][rule.account]["criteria"].items())
        + " |"
        for rule in RULES
    ]
    stale = stale_note(sig)
    return [
        f":::{{admonition}} {label}: what the MLPs compute, three accounts scored (not the paper's claims)",
        ":class: note",
        "",
        "Each account's signatures, decided by its rules written before the runs ([Three accounts](accounts.ipynb)); "
        "an account passes when every deciding signature passes; the accounts are not exclusive."
        + ("" if evidence else " On this model they check the machinery, not the accounts.")
        + stale,
        "",
        "| account | verdict | signatures |",
        "|---|---|---|",
        *rows,
        ":::",
        "",
    ]
