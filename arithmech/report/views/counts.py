"""Counts that several pages quote, computed in one place: how many key heads a model has (and which heads the
later steps study instead), and how many prompts a round-robin draw over the templates gives.

Counted page by page, one model's key heads came out differently on different pages ("1" on Identify, the top
10 called key heads on Analyze, "2 heads" at the Explorer's −1 %), and the introduction typed the Explorer's
prompt count by hand. A count a reader meets on two pages must be the same number, so every page that says
how many key heads or how many Explorer prompts there are asks this module:

* :func:`key_heads` (:func:`key_heads_of` for a result in memory) takes identify's files read back:
  ``key_heads.json`` (the heads whose whole 95 % interval of the effect lies below the run's threshold,
  :func:`arithmech.methods.effects.key_heads`) and ``effects.csv`` (how many heads the model has, how many pass on the
  mean alone, the paper's rule), and the heads the later steps study (:func:`arithmech.methods.effects.studied_heads`:
  the key heads, or the top ones by effect rank where none passes). Its :class:`KeyHeads` words them:
  :meth:`KeyHeads.summary` ("1 key head of 48 (head 0.0)"), :meth:`KeyHeads.sentence` (with the rule, the mean-alone
  count and what is studied instead).
* :func:`prompt_count` counts prompts by template (from a drawn prompts table, or from :func:`round_robin`, the
  templates a draw of ``n`` takes before it happens: what the introduction quotes for the Explorer), and
  :meth:`PromptCount.phrase` words it: "144 prompts, 3 of each of the 48 templates of Fig. 8 and Fig. 10".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from arithmech.core.names import components
from arithmech.data import templates as figure_templates
from arithmech.identify.result import Ranking, Result
from arithmech.methods.effects import studied_heads


def _pct(x: float) -> str:
    return f"{100 * x:+g}%".replace("-", "−")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# ---------------------------------------------------------------------------------------------- key heads
@dataclass(frozen=True)
class KeyHeads:
    """Identify's key heads of one model and what the pages say about them. ``names``: the key heads' file ids
    ("13.11"), ranked; ``n_heads``: every head of the task; ``n_mean_below``: heads whose mean effect alone is
    below ``threshold`` (the paper's rule); ``studied``/``studied_from``: the heads later steps study and where
    they come from (:func:`~arithmech.methods.effects.studied_heads`)."""

    task: str
    threshold: float
    names: tuple[str, ...]
    n_heads: int
    n_mean_below: int
    studied: tuple[str, ...]
    studied_from: str

    @property
    def n(self) -> int:
        """How many key heads: the one number every page quotes."""
        return len(self.names)

    def summary(self) -> str:
        """ "1 key head of 48 (head 0.0)", "3 key heads of 48 (head 0.0, ...)", "no key head of 270"."""
        if not self.n:
            return f"no key head of {self.n_heads}"
        return f"{_plural(self.n, 'key head')} of {self.n_heads} ({components(self.names)})"

    def rule(self) -> str:
        """What makes a head key, in words."""
        return f"the whole 95% interval of its effect lies below {_pct(self.threshold)}"

    def studied_phrase(self) -> str:
        """The heads the later steps study, in words: "the key heads (head 0.0)" or, where none is key, "the top
        10 by effect rank (head 14.2, ...)"."""
        what = "the key heads" if self.n else f"the {self.studied_from}"
        return f"{what} ({components(self.studied)})"

    def studied_label(self) -> str:
        """A short label for the studied heads (a dropdown's mark, a toggle): "key", or "top 10" where none is key."""
        return "key" if self.n else self.studied_from.replace(" by effect rank", "")

    def sentence(self) -> str:
        """The summary, the rule, the count on the mean alone, and the heads studied instead where none is key."""
        mean = {0: "none passes", 1: "1 passes"}.get(self.n_mean_below, f"{self.n_mean_below} pass")
        mean += " on the mean alone, the paper's rule"
        out = f"{self.summary()}: a head is key when {self.rule()} ({mean})"
        if not self.n:
            out += f"; the later steps study {self.studied_phrase()} instead"
        return out + "."


def key_heads(files: Result | Ranking) -> KeyHeads:
    """The key heads of identify's files read back (its :class:`~arithmech.identify.result.Result`, or its
    :class:`~arithmech.identify.result.Ranking`: their ``key_heads.json`` and ``effects.csv``); see the module."""
    return key_heads_of(files.key_heads, files.effects)


def key_heads_of(kh: dict, eff) -> KeyHeads:
    """:func:`key_heads` of an identify result in memory: its ``key_heads`` dict (what ``key_heads.json`` holds)
    and its effects frame (a page that runs identify on other prompts, e.g. GSM8K-style word problems)."""
    task, threshold = kh["task"], float(kh["threshold"])
    heads = eff[(eff["task"] == task) & (eff["head"].astype(str) != "mlp")]
    studied, source = studied_heads(eff, task, threshold)
    return KeyHeads(
        task=task,
        threshold=threshold,
        names=tuple(h["name"] for h in kh["heads"]),
        n_heads=len(heads),
        n_mean_below=int(kh["n_heads_mean_below"]),
        studied=tuple(f"{l}.{h}" for l, h in studied),
        studied_from=source.replace(" (no key head)", ""),
    )


# ------------------------------------------------------------------------------------------------ prompts
FIGURES = "Fig. 8 and Fig. 10"  # the figures of the paper that print the templates of task "all"


def round_robin(n: int) -> list[str]:
    """The template ids a draw of ``n`` prompts over every template takes, in order
    (:func:`arithmech.data.pairs.draw_pairs`: template ``k % len(templates)`` for the ``k``-th prompt)."""
    tpls = figure_templates.FIG8 + figure_templates.FIG10
    return [tpls[k % len(tpls)].id for k in range(n)]


@dataclass(frozen=True)
class PromptCount:
    """Prompts by template: ``n`` in all, ``per_template`` (template id → prompts), over ``n_templates``
    templates of which ``n_used`` have at least one prompt."""

    n: int
    per_template: dict[str, int]
    n_templates: int

    @property
    def n_used(self) -> int:
        return sum(1 for v in self.per_template.values() if v)

    def spread(self) -> str:
        """ "3 of each of the 48 templates of Fig. 8 and Fig. 10"; an uneven draw says "1 or 2 of each", a
        partial one "one of each of 20 of the 48 templates"."""
        per = sorted({v for v in self.per_template.values() if v})
        each = "one" if per == [1] else " or ".join(map(str, per))
        used = f"{self.n_used} of " if self.n_used < self.n_templates else ""
        return f"{each} of each of {used}the {self.n_templates} templates of {FIGURES}"

    def phrase(self) -> str:
        """ "144 prompts, 3 of each of the 48 templates of Fig. 8 and Fig. 10"."""
        return f"{_plural(self.n, 'prompt')}, {self.spread()}"


def explorer_sentence(n_prompts: int, models: list[str]) -> str:
    """The introduction's sentence on the Explorer page (``book/_generated/explorer.md``): what a reader can do
    there, on which ``models`` (labels), and over how many prompts (:func:`prompt_count` of :func:`round_robin`:
    the draw the page makes with its ``n_prompts`` parameter)."""
    on = models[0] if len(models) == 1 else ", ".join(models[:-1]) + " and " + models[-1]
    c = prompt_count(round_robin(n_prompts))
    return (
        f"The [Explorer](explorer.ipynb) page lets you pick any of its {_plural(c.n, 'prompt')} ({c.spread()}) "
        f"on {on}: its top-5 next tokens, intact and with the heads past a threshold knocked out, their attention "
        "from END and the number token each MLP writes, with a threshold slider and clickable heads in the effects "
        "map — all embedded in the page, no kernel needed."
    )


def prompt_count(template_ids: Iterable[str]) -> PromptCount:
    """Count prompts by template from their template ids (a drawn prompts table's ``template`` column, or
    :func:`round_robin`); every template of Fig. 8 and Fig. 10 is counted, those without a prompt as 0."""
    ids = list(template_ids)
    every = [t.id for t in figure_templates.FIG8 + figure_templates.FIG10]
    c = Counter(ids)
    unknown = sorted(set(c) - set(every))
    if unknown:
        raise ValueError(f"template ids {unknown} are not templates of {FIGURES}")
    return PromptCount(n=len(ids), per_template={t: c.get(t, 0) for t in every}, n_templates=len(every))
