"""One colour per meaning across the book: the colour roles every chart takes its colours from.

A reader who learns on the Identify page that red is "a key head" must not meet red as "operand A" on the
Analyze page and as "full SFT" on the Fine-tune page. So colours are not picked per chart:

* :data:`ROLES` maps a *role* (what a colour encodes: the fine-tuning arm, the attribution method, a token's
  operand role, ...) to ``{value: colour}``. A chart asks for a role's colours (:func:`scale`,
  :func:`colour`) and never writes a colour literal.
* A colour belongs to one role only; the exceptions are the two colours of the :data:`SHARED` meanings,
  which mean the same thing wherever they appear: **red is a key component** (a key head, the top-k by
  effect rank, the precise-key arm — the paper's Fig. 2 red, where patching lowers the answer logit) and
  **grey is the random control** (random heads, random circuits, non-key heads, the precise-random arm).
* Green means one thing: the answer (token or curve). No other role is red or green.
* Continuous colours are named vega schemes, one per quantity (:data:`SCHEMES`); ``redblue`` keeps red on
  the negative side, so a red cell and a red "key" line say the same thing.
* ``series`` is the palette of categories without a fixed meaning (a legend of head names, counterfactual
  kinds); it is the theme's default category range, so an uncoloured legend never draws red or green.

``tests/unit/report/test_colours.py`` builds every chart of :mod:`arithmech.report` and checks, from its
Vega-Lite spec, that each colour it uses is one of the roles that chart may use.
"""

from __future__ import annotations

from typing import Any

import altair as alt

KEY = "#c0392b"  # red: a key component / the top k by effect rank (the shared meaning, SHARED)
CONTROL = "#95a5a6"  # grey: the random control / the non-key components (the shared meaning, SHARED)

ROLES: dict[str, dict[str, str]] = {
    # key vs control: Fig. 3's effect-rank curve vs its random band, top-n circuits vs random circuits,
    # key heads vs the non-key heads' band
    "selection": {"key": KEY, "control": CONTROL},
    # the fine-tuning arms of Table 1: precise-key tunes the key heads, precise-random random heads
    # (precise-share tunes the share rule's heads; precise-random-any draws random heads from any layer;
    # base-shots is the base model with K solved examples)
    "arm": {
        "base": "#2c3e50",
        "full": "#2471a3",
        "precise-key": KEY,
        "precise-share": "#af601a",
        "precise-random": CONTROL,
        "precise-random-any": "#4d5656",
        "base-shots": "#7fb3d5",
    },
    # the ways of measuring a component's effect (the Beyond chapter)
    "method": {"exact": "#1c2833", "EAP": "#b7950b", "EAP-IG": "#a04000"},
    # a token's role in the prompt (Fig. 5, Fig. 6a: what the heads read, what the MLPs receive)
    "operand": {"A": "#2e86c1", "B": "#e67e22", "operator": "#8e44ad", "bos": "#bdc3c7", "other": "#e5e8e8"},
    # the answer and everything else (the explorer's top-5 bars, Fig. 6b's curves): the book's only green
    "answer": {"answer": "#27ae60", "other": "#aab7b8"},
    # a benchmark; a toy benchmark shares the colour of the paper benchmark it stands for
    "benchmark": {
        "two-digit (math)": "#1a5276",
        "GSM8K": "#1a5276",
        "negative differences (math)": "#48c9b0",
        "AddSub": "#48c9b0",
        "single-digit (math)": "#6c3483",
        "SingleEq": "#6c3483",
        "SVAMP": "#935116",
        "generic facts": "#d68910",
        "MMLU": "#d68910",
        "CSQA": "#626567",
    },
    # the nodes of the circuit graph (Beyond)
    "node": {"sender": "#5d6d7e", "receiver": "#17202a", "logits": "#ca6f1e"},
    # reference lines drawn over data: a run with everything of a kind knocked out, floors, thresholds, knees,
    # targets (marker), zero lines, the diagonal of a scatter
    "reference": {"all out": "#784212", "marker": "#555555", "zero": "#bbbbbb", "diagonal": "#888888"},
    # marks that carry no category: text, outlines, a single-colour mark, the theme's chrome
    "ink": {
        "black": "#000000",
        "white": "#ffffff",
        "outline": "#111111",
        "mark": "#34495e",
        "muted": "#5f6a6a",
        "axis": "#999999",
    },
    # categories without a fixed meaning (head names, counterfactual kinds, template forms): no red, no green
    "series": {
        str(i): c
        for i, c in enumerate(["#4e79a7", "#f28e2b", "#b07aa1", "#9c755f", "#76b7b2", "#edc948", "#59636e", "#d4a6c8"])
    },
}

# Colours that mean the same thing in every role they appear in (every other colour belongs to one role).
SHARED = {
    KEY: "a key component: key heads, the top k by effect rank, the precise-key arm",
    CONTROL: "the random control: random heads or circuits, non-key heads, the precise-random arm",
}

# Continuous quantities: one vega scheme each.
SCHEMES = {
    "effect": "redblue",  # red: patching lowers the answer logit (the component helps), as Fig. 2
    "attention": "teals",  # attention weight from END (not red: red is "key")
    "cosine": "blues",
}  # cosine similarity with an unembedding


def colour(role: str, value: str) -> str:
    """The colour of ``value`` in ``role`` (``colour("arm", "full")``); a ``KeyError`` names what exists."""
    try:
        return ROLES[role][value]
    except KeyError:
        raise KeyError(
            f"no colour for {value!r} in role {role!r}; roles: {sorted(ROLES)}, "
            f"values of {role!r}: {sorted(ROLES.get(role, {}))}"
        ) from None


def scale(role: str, labels: dict[str, str] | list[str] | None = None) -> alt.Scale:
    """A categorical scale whose range comes from ``role``.

    ``labels``: the values as the chart's data spells them, in legend order — a list of the role's own values
    (``["base", "full"]``), or ``{label: value}`` when the data uses longer words (``{"effect rank": "key"}``).
    Default: every value of the role."""
    if labels is None:
        labels = list(ROLES[role])
    pairs = labels.items() if isinstance(labels, dict) else ((v, v) for v in labels)
    domain, rng = zip(*((label, colour(role, value)) for label, value in pairs)) if labels else ((), ())
    return alt.Scale(domain=list(domain), range=list(rng))


def series(n: int | None = None) -> list[str]:
    """The palette of categories without a fixed meaning (the theme's default category range)."""
    out = list(ROLES["series"].values())
    return out if n is None else [out[i % len(out)] for i in range(n)]


def scheme(quantity: str) -> Any:
    """The vega scheme of a continuous ``quantity`` (:data:`SCHEMES`): a name, typed ``Any`` because altair types
    ``Scale(scheme=...)`` as a Literal of vega's scheme names, which a name read from a table cannot be."""
    return SCHEMES[quantity]
