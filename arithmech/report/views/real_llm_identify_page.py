"""The SmolLM2 appendix's Identify sections: K solved examples, the key heads, their knockout and stability.

:class:`IdentifySection`: the shots step's rule and yield (the K the page runs with), identify's run at that K
with the operand counterfactual beside it (Fig. 2, Fig. 15, the top heads, Fig. 3's knockout, Fig. 4's transfer,
the held-out family, the two counterfactuals compared), the zero-shot twin run and the key-head stability run.
Each method returns what its cell shows (see :mod:`arithmech.report.views.real_llm_page`).
"""

from __future__ import annotations

from functools import cached_property

import pandas as pd

from arithmech.claims.decide import claims
from arithmech.claims.evidence import Context
from arithmech.core.names import component, component_label, components
from arithmech.data import pairs
from arithmech.identify import run as identify_step
from arithmech.identify import stability_charts as stability_charts
from arithmech.identify.charts import knockout_control_chart
from arithmech.methods.ablation.tables import (
    sanity_note,
    sanity_readable,
    sanity_table,
    uniform_guess,
)
from arithmech.pipeline.ensure import ensure
from arithmech.report.charts import effect_chart
from arithmech.report.views import fewshot
from arithmech.report.views.cells import markdown
from arithmech.report.views.pages import claim_lines
from arithmech.report.views.real_llm_base import PageBase
from arithmech.report.views.table_display import verdict as verdict_word
from arithmech.steps import shots as shots_step
from arithmech.steps import stability as stability_step


class IdentifySection(PageBase):
    """The shots and identify steps of the page, each result read (or made) on first use."""

    @cached_property
    def choice(self) -> shots_step.Result:
        """The shots step's result: the yield table, the K its rule picks, the floors and the operations per K."""
        return ensure(self.P.to_shots(), self.P.recompute, model=self.net, tok=self.tok)

    @property
    def K(self) -> int:
        """The solved examples before every prompt: the rule's K, or the ``shots`` parameter where it is ≥ 0."""
        return self.choice.shots if self.P.shots < 0 else self.P.shots

    def shots_rule(self):
        """The rule that picks K (Markdown quote), from :mod:`arithmech.steps.shots`."""
        _ = self.choice
        return markdown(
            f"> {shots_step.RULE[0].upper() + shots_step.RULE[1:]}. An operation the model *can do* at "
            f"K keeps at least {shots_step.CAN_DO:.0%} of its draws (Wilson lower bound)."
        )

    def shots_table(self) -> list:
        """The yield per K and operation (table) and the sentence naming the K picked and the K the page runs."""
        y, choice, K = self.choice.table, self.choice, self.K
        kept = [
            f"{k} ({r:.0%}, 95% {lo:.0%}–{hi:.0%})" for k, r, lo, hi in zip(y.kept, y.kept_rate, y.kept_lo, y.kept_hi)
        ]
        table = (
            y.assign(kept=kept)[["shots", "op", "drawn", "token_correct", "correct", "xc_valid", "kept", "top_share"]]
            .rename(
                columns={
                    "shots": "K",
                    "op": "operation",
                    "token_correct": "answer token right",
                    "correct": "whole answer right",
                    "xc_valid": "X_c moves the answer",
                    "top_share": "most frequent answer (share of kept)",
                }
            )
            .style.format({"most frequent answer (share of kept)": "{:.0%}"})
            .hide(axis="index")
        )
        floors = "; ".join(f"K = {k}: {f['op']} {f['kept_rate']:.0%}" for k, f in choice.floors.items())
        return [
            table,
            markdown(
                f"The rule picks **K = {choice.shots}** (weakest operation per K: {floors}). This page runs with "
                f"K = {K}" + (" (set by the `shots` parameter)" if self.P.shots >= 0 else "") + "; the operations the "
                f"model can do at that K: {', '.join(choice.can_do.get(K, [])) or 'none'}."
            ),
        ]

    def _k_shot(self) -> identify_step.Config:
        return self.P.to_identify(self.K)

    @cached_property
    def identify(self) -> identify_step.Result:
        """identify.run's result (as ``python -m arithmech identify`` and the Identify chapter run it), with the
        operand counterfactual made beside it (:attr:`operand`)."""
        r = ensure(self._k_shot(), self.P.recompute)
        _ = self.operand
        return r

    @cached_property
    def operand(self) -> dict:
        """The operand counterfactual beside identify's files (:func:`arithmech.identify.run.operand`)."""
        return identify_step.operand(self._k_shot(), recompute=self.P.recompute)

    def kept(self) -> pd.DataFrame:
        """Pairs drawn and X_r kept per task (rows: tasks)."""
        samples = self.identify.run["samples"].items()
        return pd.DataFrame({t: {"drawn": i["n_drawn"], "kept (X_r)": i["n_kept"]} for t, i in samples}).T

    def fig2(self) -> list:
        """Fig. 2 twice: the relative change of the answer logit, then the logit difference (pooled task)."""
        e = self.identify.effects
        return [
            effect_chart.effect_heatmap(
                e,
                "all",
                "effect",
                fig="Fig. 2",
                subtitle="relative change of the answer logit (the paper's metric); last column: MLP",
            ),
            effect_chart.effect_heatmap(
                e,
                "all",
                "logit_diff",
                fig="Fig. 2",
                subtitle="the same patching as a logit difference (stable where the answer logit is small)",
            ),
        ]

    def fig15(self):
        """Fig. 15: the logit difference per operation."""
        ops = ["addition", "subtraction", "multiplication", "division"]
        return effect_chart.effect_heatmap(self.identify.effects, ops, "logit_diff", fig="Fig. 15")

    def claims_markdown(self, ids: list[str]):
        """The claims ``ids`` as a Markdown list of their verdict sentences."""
        return markdown("\n".join(f"* {line}" for line in claim_lines(claims(Context(self.folder), ids), ids)))

    def top_heads(self):
        """The ten heads with the most negative effect on the pooled task, with the KV head each reads."""
        e = self.identify.effects
        top = e[(e.task == "all") & (e["head"] != "mlp")].nsmallest(10, "effect")
        top = top.assign(
            kv_head=[self.geo.kv_head(int(h)) for h in top["head"]],
            head=[component(la, h) for la, h in zip(top.layer, top["head"])],
        )
        return (
            top[["head", "kv_head", "effect", "logit_diff"]]
            .rename(
                columns={"kv_head": "key/value head", "effect": "effect (relative)", "logit_diff": "logit difference"}
            )
            .style.format({"effect (relative)": "{:+.2%}", "logit difference": "{:+.3f}"})
            .hide(axis="index")
        )

    def knockout(self) -> list:
        """Fig. 3: the knockout curves of heads and of MLPs, the sanity rows and their 95% intervals."""
        ko = self.identify.knockout
        st = sanity_table(ko, chance=uniform_guess(pairs.samples(self.folder)))
        return [
            knockout_control_chart(ko, "head"),
            knockout_control_chart(ko, "mlp"),
            sanity_readable(st),
            markdown(sanity_note(st)),
        ]

    def transfer(self) -> list:
        """Fig. 4's transfer prompts before/after the knockout, and the held-out template family (each where the
        run made it)."""
        r, out = self.identify, []
        tr = r.transfer
        if tr is not None:
            ok = tr[tr.status == "ok"]
            out.append(
                ok[ok["rank"] == 1].pivot_table(
                    index=["case", "prompt", "expected"], columns="when", values="token", aggfunc="first"
                )[["before", "after"]]
            )
        held = r.heldout or {}
        if "base_accuracy" in held:
            out.append(
                pd.DataFrame(
                    [
                        {
                            "held-out family": held["family"],
                            "heads knocked out": held["heads_from"],
                            "prompts": held["n"],
                            "accuracy before": f"{held['base_accuracy']:.1%}",
                            "after (these heads out)": f"{held['knockout_accuracy']:.1%}",
                            "relative change": f"{held['relative_drop']:+.1%}",
                            "after (as many random heads out)": f"{held['random_accuracy_mean']:.1%} ± "
                            f"{held['random_accuracy_std']:.1%}",
                        }
                    ]
                )
            )
        return out

    def operand_shared(self) -> str:
        """The heads both counterfactuals rank in their top 10."""
        ov = self.operand["overlap"]
        return f"shared: {components(ov['shared'])}  ({len(ov['shared'])} of {ov['top']})"

    def operand_tables(self) -> list:
        """Per head of either top 10: its rank membership and logit change under both counterfactuals (table), and
        addition's heatmap under the operator and the operand counterfactual side by side."""
        operand, e = self.operand, self.identify.effects
        ov = operand["overlap"]
        both = pd.DataFrame(
            [
                {
                    "head": component_label(b["head"]),
                    "in operator top 10": b["head"] in ov["a"],
                    "in operand top 10": b["head"] in ov["b"],
                    "operator: logit change": b["operator"]["logit_diff"],
                    "operand: logit change": b["operand"]["logit_diff"],
                }
                for b in ov["by_head"]
            ]
        )
        return [
            both.sort_values("operand: logit change").style.format(precision=3).hide(axis="index"),
            effect_chart.effect_heatmap(
                pd.concat([e[e.task == "addition"], operand["effects"]]),
                ["addition", "addition (operand)"],
                "logit_diff",
                fig="Fig. 2",
                subtitle="addition: operator counterfactual (left) vs operand counterfactual (right)",
            ),
        ]

    @cached_property
    def runs(self) -> dict[str, Context]:
        """The zero-shot run and this page's K-shot run, by label, each its folder's step Results (a
        :class:`~arithmech.claims.evidence.Context`, each file read once, on first use: built when
        :meth:`zero_shot_yield` has ensured the zero-shot run)."""
        return {"zero-shot": Context(self.folder / "zero-shot"), f"{self.K}-shot": Context(self.folder)}

    def zero_shot_yield(self):
        """Ensures the zero-shot identify run (the same command with ``shots=0``); the yield of both runs."""
        zero = self.P.to_identify(0, out=str(self.folder / "zero-shot"))
        ensure(zero, self.P.recompute, model=self.net, tok=self.tok)
        return fewshot.yield_rows(self.runs).style.hide(axis="index")

    def stability_charts(self) -> list:
        """The key-head stability run on addition: Jaccard overlaps and the top-20 heads' effect intervals."""
        P = self.P
        self.stability = ensure(P.to_stability(self.K), P.recompute, model=self.net, tok=self.tok)
        return [
            stability_charts.jaccard_chart(self.stability.table),
            stability_charts.head_intervals_chart(self.stability.heads, -0.05, top=20),
        ]

    def stability_claims(self):
        """The stability run's claims, with their verdicts (table)."""
        stab = stability_step.claims(self.stability.table, self.stability.runs)
        return (
            stab.assign(holds=stab.holds.map(verdict_word))[["claim", "here", "holds"]]
            .rename(columns={"here": "this run", "holds": "verdict"})
            .style.hide(axis="index")
        )
