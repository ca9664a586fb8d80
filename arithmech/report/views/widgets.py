"""The prompt explorer in Jupyter (§5.2): ipywidgets around :func:`arithmech.methods.explorer.explore`.

>>> from arithmech.report.views.widgets import explorer
>>> explorer(model, tok, key_heads, reference=samples)      # leave it last in a cell to show it

A text box for the prompt and one for its counterfactual, a dropdown of heads (the studied heads first, marked
with ``heads_label``: "key" where they are identify's key heads, "top 10" where none is key and the top heads
by effect rank stand in, :meth:`arithmech.report.views.counts.KeyHeads.studied_label`), a toggle that mean-ablates them,
a button, and an output area with the top-5 next tokens, the chosen head's attention strip and the per-layer number
tokens. All logic is in :mod:`arithmech.methods.explorer`; :meth:`Explorer.refresh` is what the controls call and can be
called directly (tests do, without a browser).

A kernel-bound widget is dead in a static page, so a chapter builds it only when asked
(``interactive=True`` parameter) and the book shows precomputed altair views instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from arithmech.core.models import geometry
from arithmech.core.names import component
from arithmech.methods.explorer import explore, knockout_means, mean_ablation, top_table
from arithmech.report.charts import attention_chart, mlp_chart


def _bundle(obj) -> dict:
    """A notebook ``display_data`` output for ``obj`` (DataFrame or altair chart), no kernel needed."""
    from IPython.core.formatters import format_display_data  # lazy: the book extra (a kernel)

    data, meta = format_display_data(obj)
    return {"output_type": "display_data", "data": data, "metadata": meta}


class Explorer:
    """The controls and their callback. ``key_heads``: ``[(layer, head), ...]``, the studied heads; ``reference``:
    samples whose counterfactuals give the means the knockout writes (the knockout is disabled without them);
    ``heads_label``: what the studied heads are, in the dropdown and on the toggle ("key", or "top 10" where
    none is key)."""

    def __init__(
        self,
        model,
        tok,
        key_heads: Sequence[tuple[int, int]],
        reference: Sequence | None = None,
        prompt: str = "4 + 3 =",
        counterfactual: str = "4 @ 3 =",
        heads_label: str = "key",
    ):
        import ipywidgets  # lazy: the book extra (a live kernel)

        self.model, self.tok, self.key_heads = model, tok, [tuple(h) for h in key_heads]
        geo = geometry(model)
        heads = self.key_heads + [
            (l, h) for l in range(geo.n_layers) for h in range(geo.n_heads) if (l, h) not in self.key_heads
        ]
        self.prompt = ipywidgets.Text(value=prompt, description="prompt")
        self.counterfactual = ipywidgets.Text(
            value=counterfactual, description="counterfactual", placeholder="optional, e.g. 4 @ 3 ="
        )
        self.head = ipywidgets.Dropdown(
            options=[
                (component(l, h) + (f" ({heads_label})" if (l, h) in self.key_heads else ""), (l, h)) for l, h in heads
            ],
            value=heads[0],
            description="head",
        )
        self.knockout = ipywidgets.Checkbox(
            value=False, description=f"knock out the {heads_label} heads (pooled X_c mean)", disabled=not reference
        )
        self.button = ipywidgets.Button(description="run", button_style="primary")
        self.output = ipywidgets.Output()
        self._reference = list(reference or [])
        self._means = None
        self.tables: dict[str, pd.DataFrame] = {}
        self.button.on_click(lambda _: self.refresh())
        self.head.observe(lambda _: self.refresh(), names="value")
        self.knockout.observe(lambda _: self.refresh(), names="value")
        self.widget = ipywidgets.VBox(
            [
                ipywidgets.HBox([self.prompt, self.counterfactual]),
                ipywidgets.HBox([self.head, self.knockout, self.button]),
                self.output,
            ]
        )

    def _knockout(self):
        if not self.knockout.value:
            return None
        if self._means is None:
            self._means = knockout_means(self.model, self.tok, self._reference)
        return mean_ablation(self.model, self.key_heads, self._means)

    def refresh(self) -> dict[str, pd.DataFrame]:
        """Recompute for the current controls and redraw the output area; returns the tables."""
        tables = explore(
            self.model,
            self.tok,
            self.prompt.value,
            self.counterfactual.value.strip() or None,
            head=self.head.value,
            knockout=self._knockout(),
        )
        top = top_table(tables["top"])
        att = tables["attention"].assign(
            sample=lambda d: d.input + " / " + d.condition,
            head=lambda d: d["head"] + " " + d.input + " / " + d.condition,
        )
        nums = tables["numbers"].assign(prompt=lambda d: d.input + " / " + d.condition)
        outs = [
            _bundle(top),
            _bundle(attention_chart.attention_strip_chart(att, title="Attention of the chosen head", dropdown=False)),
            _bundle(mlp_chart.top_numbers_chart(nums, fig="Fig. 6c", column="prompt")),
        ]
        self.output.outputs = tuple(outs)
        self.tables = tables
        return tables

    def _ipython_display_(self):
        from IPython.display import display  # lazy: the book extra (a kernel)

        display(self.widget)


def explorer(
    model,
    tok,
    key_heads: Sequence[tuple[int, int]],
    reference: Sequence | None = None,
    prompt: str = "4 + 3 =",
    counterfactual: str = "4 @ 3 =",
    run: bool = True,
    heads_label: str = "key",
) -> Explorer:
    """Build the explorer (and fill it once when ``run``). Display it by leaving it last in a cell."""
    e = Explorer(model, tok, key_heads, reference, prompt, counterfactual, heads_label)
    if run:
        e.refresh()
    return e
