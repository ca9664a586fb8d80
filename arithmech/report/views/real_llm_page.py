"""The appendix on a real small LLM (``book/appendix_smollm2.md``): every table and chart of the page, one call each.

The page runs the paper's method on SmolLM2-135M: :class:`Page` loads the model once, ensures each step's files
(``accuracy``, ``shots``, ``identify``, its zero-shot twin, ``stability``, ``analyze``: reused when made with the
page's parameters, :func:`arithmech.steps.ensure.ensure`) and each method returns what its cell shows — pandas
Stylers and frames (tables), altair charts, IPython ``Markdown`` (computed sentences) — as one object or a list the
cell passes to ``display(*…)``. Nothing is decided here: verdicts come from the claims table
(:func:`arithmech.claims.rules.claims`), counts from :mod:`arithmech.report.views.counts`.

>>> page = Page(chapters.check("appendix_smollm2", globals()))
>>> display(*page.accuracy()); page.shots_rule(); display(*page.fig2())
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import pandas as pd

from arithmech import paper
from arithmech.claims import curves as CV
from arithmech.claims.rules import claims
from arithmech.core.models import load_model
from arithmech.core.names import component, component_label, components, token_label
from arithmech.core.names import stages as stage_layers
from arithmech.core.results import folder_name, model_folder
from arithmech.core.results import read as read_result
from arithmech.data import pairs
from arithmech.methods import attention
from arithmech.methods.ablation.tables import sanity_intervals, sanity_readable, sanity_table, uniform_guess
from arithmech.report.charts import plots
from arithmech.report.charts import stability_views as stability_charts
from arithmech.report.charts.attention_control import labels_table, nonkey_band_chart
from arithmech.report.charts.knockout_chart import knockout_control_chart
from arithmech.report.views import curves as RC
from arithmech.report.views import fewshot
from arithmech.report.views import table1 as T1
from arithmech.report.views.finetune_page import frontier, markdown
from arithmech.report.views.pages import (
    answer_sentence,
    answer_token_sentence,
    chapter_end,
    claim_lines,
    controls_table,
    findings_table,
    is_control,
    tally,
)
from arithmech.report.views.pages import verdict as verdict_word
from arithmech.steps import accuracy as accuracy_step
from arithmech.steps import analyze as analyze_step
from arithmech.steps import identify as identify_step
from arithmech.steps import shots as shots_step
from arithmech.steps import stability as stability_step
from arithmech.steps.config import BOOK_SCALE
from arithmech.steps.config import Shots as ShotsConfig
from arithmech.steps.ensure import ensure

END_CLAIMS = [
    "key-heads-exist",
    "key-heads-exist-share",
    "knockout-key-vs-random",
    "precise-matches-full",
    "precise-keeps-generic",
    "ablation-removes-information",
    "answer-token-floor",
    "key-heads-stable",
]
"""The claims the page's "What this run found" box lists after the tally."""


class Page:
    """The page's model and results, loaded once (``P``: the chapter's config, :class:`~arithmech.report.build.
    chapters.SmolLM2`); each step's result is read (or made) on first use, in the page's order."""

    def __init__(self, P: Any):
        self.P = P
        self.net, self.tok, self.geo = load_model(P.model, device=P.device, dtype=P.dtype, attn_implementation="eager")
        self.folder = model_folder(P.results_dir, P.model)

    def _common(self) -> dict:
        P = self.P
        return dict(model_name=P.model, results=P.results_dir, seed=P.seed, device=P.device, dtype=P.dtype)

    def tokenizer_lines(self) -> str:
        """The model's geometry and how its tokenizer splits ``3 + 5 = 8`` (``␣``: a space token)."""
        ids = self.tok("3 + 5 = 8")["input_ids"]
        return f"{self.geo}\n'3 + 5 = 8' → " + " | ".join(map(token_label, self.tok.convert_ids_to_tokens(ids)))

    def accuracy(self) -> list:
        """Accuracy per operation (table, Wilson 95% intervals), the answer-token rule it was scored under, and the
        per-template chart (Fig. 8 and Fig. 10's templates)."""
        P = self.P
        acc = ensure(
            accuracy_step.Config(**self._common(), n_per_template=P.n_per_template),
            P.recompute,
            model=self.net,
            tok=self.tok,
        )
        s = acc[acc.template == "(all)"]
        table = pd.DataFrame(
            {
                "operation": s.op,
                "prompts": s.n,
                "accuracy": s.accuracy.map("{:.1%}".format),
                "95% interval": [f"{lo:.1%}–{hi:.1%}" for lo, hi in zip(s.ci_low, s.ci_high)],
                "mean P(answer)": s.mean_p_answer.map("{:.3f}".format),
            }
        ).style.hide(axis="index")
        return [
            table,
            markdown(answer_token_sentence(accuracy_step.scored_with(self.folder))),
            plots.template_accuracy_chart(acc[acc.template != "(all)"], P.model),
        ]

    @cached_property
    def choice(self) -> dict:
        """The shots step's result: the yield table, the K its rule picks, the floors and the operations per K."""
        return ensure(
            ShotsConfig(**self._common(), example_sets=self.P.example_sets),
            self.P.recompute,
            model=self.net,
            tok=self.tok,
        )

    @property
    def K(self) -> int:
        """The solved examples before every prompt: the rule's K, or the ``shots`` parameter where it is ≥ 0."""
        return self.choice["shots"] if self.P.shots < 0 else self.P.shots

    def shots_rule(self):
        """The rule that picks K (Markdown quote), from :mod:`arithmech.steps.shots`."""
        _ = self.choice
        return markdown(
            f"> {shots_step.RULE[0].upper() + shots_step.RULE[1:]}. An operation the model *can do* at "
            f"K keeps at least {shots_step.CAN_DO:.0%} of its draws (Wilson lower bound)."
        )

    def shots_table(self) -> list:
        """The yield per K and operation (table) and the sentence naming the K picked and the K the page runs."""
        y, choice, K = self.choice["table"], self.choice, self.K
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
        floors = "; ".join(f"K = {k}: {f['op']} {f['kept_rate']:.0%}" for k, f in choice["floors"].items())
        return [
            table,
            markdown(
                f"The rule picks **K = {choice['shots']}** (weakest operation per K: {floors}). This page runs with "
                f"K = {K}" + (" (set by the `shots` parameter)" if self.P.shots >= 0 else "") + "; the operations the "
                f"model can do at that K: {', '.join(choice['can_do'].get(K, [])) or 'none'}."
            ),
        ]

    def _identify_config(self, **fields) -> Any:
        """identify's config at this page's sizes (``fields``: K and its examples, or the zero-shot run's folder)."""
        P = self.P
        return identify_step.Config(
            **self._common(),
            n_samples=P.n_samples,
            **fields,
            knockout_split=P.knockout_split,
            bootstrap=P.bootstrap,
            **{**BOOK_SCALE, "knockout_samples": P.knockout_samples},
            n_random=P.random_orders,
        )

    def _k_shot(self) -> Any:
        return self._identify_config(shots=self.K, example_sets=self.P.example_sets)

    @cached_property
    def identify(self) -> dict:
        """identify.run's result (as ``python -m arithmech identify`` and the Identify chapter run it), with the
        operand counterfactual beside it under ``"operand"``."""
        r = ensure(self._k_shot(), self.P.recompute)
        return {**r, "operand": identify_step.operand(self._k_shot(), recompute=self.P.recompute)}

    def kept(self) -> pd.DataFrame:
        """Pairs drawn and X_r kept per task (rows: tasks)."""
        samples = self.identify["run"]["samples"].items()
        return pd.DataFrame({t: {"drawn": i["n_drawn"], "kept (X_r)": i["n_kept"]} for t, i in samples}).T

    def fig2(self) -> list:
        """Fig. 2 twice: the relative change of the answer logit, then the logit difference (pooled task)."""
        e = self.identify["effects"]
        return [
            plots.effect_heatmap(
                e,
                "all",
                "effect",
                fig="Fig. 2",
                subtitle="relative change of the answer logit (the paper's metric); last column: MLP",
            ),
            plots.effect_heatmap(
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
        return plots.effect_heatmap(self.identify["effects"], ops, "logit_diff", fig="Fig. 15")

    def claims_markdown(self, ids: list[str]):
        """The claims ``ids`` as a Markdown list of their verdict sentences."""
        return markdown("\n".join(f"* {line}" for line in claim_lines(claims(self.folder, ids), ids)))

    def top_heads(self):
        """The ten heads with the most negative effect on the pooled task, with the KV head each reads."""
        e = self.identify["effects"]
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
        ko = self.identify["knockout"]
        st = sanity_table(ko, chance=uniform_guess(pairs.samples(self.folder)))
        return [
            knockout_control_chart(ko, "head"),
            knockout_control_chart(ko, "mlp"),
            sanity_readable(st),
            markdown(
                "95% intervals: " + sanity_intervals(st) + ". Means: " + "; ".join(sorted(set(st.mean_source))) + "."
            ),
        ]

    def transfer(self) -> list:
        """Fig. 4's transfer prompts before/after the knockout, and the held-out template family (each where the
        run made it)."""
        r, out = self.identify, []
        tr = r.get("transfer")
        if tr is not None:
            ok = tr[tr.status == "ok"]
            out.append(
                ok[ok["rank"] == 1].pivot_table(
                    index=["case", "prompt", "expected"], columns="when", values="token", aggfunc="first"
                )[["before", "after"]]
            )
        held = r.get("heldout", {})
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
        ov = self.identify["operand"]["overlap"]
        return f"shared: {components(ov['shared'])}  ({len(ov['shared'])} of {ov['top']})"

    def operand_tables(self) -> list:
        """Per head of either top 10: its rank membership and logit change under both counterfactuals (table), and
        addition's heatmap under the operator and the operand counterfactual side by side."""
        operand, e = self.identify["operand"], self.identify["effects"]
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
            plots.effect_heatmap(
                pd.concat([e[e.task == "addition"], operand["effects"]]),
                ["addition", "addition (operand)"],
                "logit_diff",
                fig="Fig. 2",
                subtitle="addition: operator counterfactual (left) vs operand counterfactual (right)",
            ),
        ]

    @property
    def runs(self) -> dict:
        """The zero-shot run and this page's K-shot run, by label."""
        return {"zero-shot": self.folder / "zero-shot", f"{self.K}-shot": self.folder}

    def zero_shot_yield(self):
        """Ensures the zero-shot identify run (the same command with ``shots=0``); the yield of both runs."""
        zero = self._identify_config(shots=0, out=str(self.folder / "zero-shot"))
        ensure(zero, self.P.recompute, model=self.net, tok=self.tok)
        return fewshot.yield_rows(self.runs).style.hide(axis="index")

    def stability_charts(self) -> list:
        """The key-head stability run on addition: Jaccard overlaps and the top-20 heads' effect intervals."""
        P = self.P
        self.stability = ensure(
            stability_step.Config(
                **self._common(),
                task="addition",
                seeds=P.stability_seeds,
                sizes=P.stability_sizes,
                shots=self.K,
                example_sets=P.example_sets,
                bootstrap=P.bootstrap,
            ),
            P.recompute,
            model=self.net,
            tok=self.tok,
        )
        return [
            stability_charts.jaccard_chart(self.stability["table"]),
            stability_charts.head_intervals_chart(self.stability["heads"], -0.05, top=20),
        ]

    def stability_claims(self):
        """The stability run's claims, with their verdicts (table)."""
        stab = stability_step.claims(self.stability["table"], self.stability["runs"])
        return (
            stab.assign(holds=stab.holds.map(verdict_word))[["claim", "here", "holds"]]
            .rename(columns={"here": "this run", "holds": "verdict"})
            .style.hide(axis="index")
        )

    @cached_property
    def analyze(self) -> dict:
        """analyze.run's result on the studied heads (key heads, or the top 10 where none passes)."""
        P = self.P
        return ensure(
            analyze_step.Config(
                model_name=P.model,
                results=P.results_dir,
                device=P.device,
                dtype=P.dtype,
                n_samples=P.n_samples,
                seed=P.seed,
                prompt="4 + 3 = ",
            ),
            P.recompute,
        )

    def attention(self) -> list:
        """The studied heads' labels (without the first position) and their attention from END by token role."""
        an = self.analyze
        labels = an["labels"]
        heads = [(int(n.split(".")[0]), int(n.split(".")[1])) for n in labels.name]
        return [
            labels_table(labels, attention.label_heads(an["roles"], heads, view="without first")),
            plots.attention_roles_chart(an["roles"], labels),
        ]

    def attention_lines(self):
        """The attention-roles rule's sentences and where ``{A}`` sits (Markdown list)."""
        heads_from = read_result(self.folder, "analyze.json")["heads_from"]
        lines = attention.verdict_lines(self.analyze["baseline"], "operand", heads_from=heads_from)
        prompts = pairs.samples(self.folder)
        at0 = sum(0 in s.positions["A"] for s in prompts)
        return markdown(
            "\n".join(f"* {line}" for line in lines)
            + f"\n* `{{A}}` sits at position 0 in {at0} of the {len(prompts)} kept prompts."
        )

    def nonkey_band(self):
        """Fig. 5's control: the studied heads against the band of the other heads."""
        return nonkey_band_chart(self.analyze["baseline"], fig="Fig. 5 control (SmolLM2)")

    def stages_line(self) -> str:
        """The start–inflection–end layers found here, beside LLaMA2-7B's."""
        s7b, n7b = paper.STAGES["LLaMA2-7B"]
        return (
            "start–inflection–end layers: "
            + "; ".join(f"{k} {stage_layers(v)}" for k, v in self.analyze["summary"]["stages"].items())
            + f" (LLaMA2-7B: {stage_layers(s7b)} of {n7b} layers)"
        )

    def mlp_charts(self) -> list:
        """Fig. 6, 13, 14: the MLPs' projections on W_U (operands read, answer written) and their top numbers."""
        an, stages = self.analyze, self.analyze["summary"]["stages"]
        return [
            plots.mlp_in_chart(an["mlp"], tuple(stages.get("operands", ())) or None),
            plots.mlp_diff_chart(an["mlp"], tuple(stages.get("answer", ())) or None),
            plots.top_numbers_chart(an["top"], prompt="4 + 3 = "),
        ]

    def table1(self) -> list:
        """Table 1 on a CPU: the arms run's frontier and verdicts (:func:`~arithmech.report.views.finetune_page.
        frontier`), the leave-one-rate-out, common-rate and grid-point tables, full SFT's learning curve, the base
        model against chance, the run's setup and progress, and each arm's chosen runs — or a note where no arms
        run has finished."""
        folder, out = self.folder, []
        if T1.has_run(folder):
            rows = CV.verdicts(folder)
            out += frontier(folder, "SmolLM2-135M", rows)
            out += [
                markdown(
                    "Leave one rate out (each rule on the pooled measure, re-decided with one grid point's "
                    "runs left out; an opposite verdict makes it inconclusive):"
                ),
                RC.loro_table(rows),
                markdown("The selection at every rate both arms ran (what one chosen rate would have decided):"),
                RC.common_rates(CV.load(folder)).style.hide(axis="index"),
                markdown(
                    "Every grid point: change from base in points with its 95 % interval over runs and "
                    "test items in brackets (crossed: what the rules read, at points with at least 3 runs) "
                    "and the item-level one (hierarchical bootstrap); math first, then the general "
                    "measures:"
                ),
            ]
            out += [part.style.hide(axis="index") for part in RC.points_tables(folder).values()]
            out += [
                markdown(
                    "How far from its bound an observed difference must lie for each rule to decide, with 3 "
                    "and with 5 runs a point (the half-width of its interval at the rule's level, from the "
                    "spreads seen so far at the compared frontier tops: `arithmech.claims.detectable`; not "
                    "a power calculation):"
                ),
                RC.detectable_table(CV.load(folder)).style.hide(axis="index"),
            ]
        chart = T1.curve_chart(folder)
        out += [chart] if chart is not None else []
        if not T1.has_run(folder):
            out.append(
                markdown(
                    f"**No finished arms run in `{folder_name(self.P.model)}/finetune/` yet.** "
                    f"`python -m arithmech arms --model {self.P.model}` makes it and resumes where it "
                    "stopped."
                )
            )
        if T1.has_base(folder):
            out.append(T1.base_vs_chance(folder))
        if T1.has_run(folder):
            out += [
                markdown(T1.setup_line(folder)),
                markdown(T1.progress_line(folder)),
                T1.arm_frame(folder),
                markdown(
                    "The rate is chosen on the validation items (seed 0's score is the one it was chosen "
                    "on), the rules score the test items (other phrasings and operand pairs); both sides "
                    "of each arm's chosen runs:"
                ),
                T1.phrasings_frame(folder),
            ]
        return out

    @cached_property
    def verdict(self) -> pd.DataFrame:
        """The claims table of this run."""
        return claims(self.folder)

    @property
    def alone(self):
        return self.folder / "addition"

    def answer(self):
        """The box at the top: the answer sentence, the claims decided again on addition alone (where that run
        exists), and the findings table (Markdown, to glue)."""
        verdict, alone = self.verdict, self.alone
        changed = (
            fewshot.changed_lines({"pooled": self.folder, "addition alone": alone})
            if (alone / "key_heads.json").exists()
            else []
        )
        own = claims(alone, ["ablation-removes-information"]).iloc[0] if changed else None
        again = (
            (
                "\n\nDecided again on addition alone, the task its control passes (the section *Addition alone*; "
                "the pooled run's reasons are in its table): " + "; ".join(changed) + ". On addition alone the "
                f"method's own ablation control reads *{verdict_word(own.holds)}*: {own.here}."
            )
            if changed
            else ""
        )
        return markdown(
            answer_sentence("SmolLM2-135M", verdict) + again + "\n\n" + findings_table(verdict[~is_control(verdict)])
        )

    def controls(self):
        """The method's controls (not claims of the paper), as a Markdown table."""
        return markdown(
            "The paper's claims and their verdicts are in the box at the top of this page. Controls of "
            "the method (not claims of the paper):\n\n" + controls_table(self.verdict)
        )

    def addition_alone(self) -> list:
        """The pooled run and the addition-alone run side by side (circuit rows, verdicts), or a note if not run."""
        alone = self.alone
        if not (alone / "key_heads.json").exists():
            return [markdown(f"**Not run yet**: `{alone}` has no `key_heads.json` (the commands above make it).")]
        pair = {"addition and subtraction pooled (this page)": self.folder, "addition alone": alone}
        return [
            fewshot.circuit_rows(pair).set_index("prompts").T,
            fewshot.verdict_rows(pair, fewshot.CLAIMS + fewshot.ANALYZE_CLAIMS).style.hide(axis="index"),
        ]

    def holds_summary(self):
        """The claims that hold, do not hold and are undecided at 135M (Markdown)."""
        v = self.verdict
        held, failed, open_ = (
            v[v.holds == True].claim.tolist(),
            v[v.holds == False].claim.tolist(),  # noqa: E712
            v[v.holds.isna()].claim.tolist(),
        )
        return markdown(
            "**Holds at 135M:** " + ("; ".join(held) or "none") + ".\n\n"
            "**Does not hold at 135M:** "
            + ("; ".join(failed) or "none")
            + "."
            + (
                "\n\n**Undecided** (results missing, or intervals that do not decide): " + "; ".join(open_) + "."
                if open_
                else ""
            )
        )

    def end(self) -> None:
        """The page's last cell: the tally and :data:`END_CLAIMS`' sentences in the findings box, and the footer
        naming the model and the parameters it ran with (K as the page ran it)."""
        P = self.P
        chapter_end(
            [tally(self.verdict).capitalize() + " (the table at the end of this page)."]
            + claim_lines(self.verdict, END_CLAIMS),
            P.model,
            {
                "n_samples": P.n_samples,
                "seed": P.seed,
                "device": P.device,
                "dtype": P.dtype,
                "knockout_samples": P.knockout_samples,
                "shots": self.K,
            },
        )
