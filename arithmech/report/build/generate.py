"""The book's second phase: the text the build computes, written to ``book/_generated/`` (git-ignored).

The hand-written pages pull it in with MyST ``{include}`` (:func:`write_generated`): the introduction's scope
box, answer sentences, Fig. 1 and findings box per model (``findings.md``), its sentence on the Explorer with
the prompt count the build gives that page (``explorer.md``, :func:`explorer_intro`), the rules page's tables
and changelog (``rules.md``) with the rules' provenance (``provenance.md``), and the parameters table of the
appendix (``parameters.md``, :func:`parameters_table`).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from pathlib import Path

from arithmech.accounts import page as accounts_page
from arithmech.accounts import result as accounts_result
from arithmech.accounts.config import Chapter as AccountsChapter
from arithmech.claims.evidence import Context
from arithmech.core.atomic import atomic_write
from arithmech.identify.result import Ranking
from arithmech.report.build.plan import chapter_values, chapters, declared_parameters
from arithmech.report.charts import pipeline
from arithmech.report.views import counts, findings, scope

GENERATED = Path("book") / "_generated"


NO_EVIDENCE = findings.NO_GROUND_TRUTH
FINDINGS = GENERATED / "findings.md"  # {include}d by book/intro.md


PARAMETERS = GENERATED / "parameters.md"  # {include}d by book/appendix_parameters.md


RULES = GENERATED / "rules.md"  # {include}d by book/claims_rules.md


PROVENANCE = GENERATED / "provenance.md"  # {include}d by book/intro.md: were the rules fixed before the results?


EXPLORER = GENERATED / "explorer.md"  # {include}d by book/intro.md: the Explorer page and its prompt count


MODELS = [("embedded", "The embedded model"), ("smollm2-135m", "SmolLM2-135M")]


NO_RESULTS = "*No results yet: `python -m arithmech book` (or `make book`) computes them and writes this box.*"


def parameters_table(root: Path) -> str:
    """Markdown: for every chapter, a table of its parameters read from its source's parameters cell.

    Columns: parameter, default, type, help (papermill reads the help from the comment after the
    default: ``n_samples = 256  # pairs per task``).
    """
    cell = lambda x: str(x).replace("|", "\\|").strip()
    text = lambda x: cell(x).replace("<", "&lt;").replace(">", "&gt;")
    out = []
    for p in chapters(root):
        out += [
            f"**[{p.stem}]({p.stem}.ipynb)**",
            "",
            "| parameter | default | type | help |",
            "| --- | --- | --- | --- |",
        ]
        for name, info in declared_parameters(root / p).items():
            typ = info["inferred_type_name"]
            if typ in (None, "None"):
                try:
                    typ = type(ast.literal_eval(info["default"])).__name__
                except (ValueError, SyntaxError):
                    typ = ""
            out.append(f"| `{name}` | `{cell(info['default'])}` | {text(typ)} | {text(info['help'])} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def explorer_intro(root: Path, sets: Sequence[str] = ()) -> str:
    """The introduction's sentence on the Explorer (:func:`arithmech.report.views.counts.explorer_sentence`) with the
    models and ``n_prompts`` the build gives that chapter (``sets``: the build's ``--set`` values); "" in a book
    without the chapter."""
    if not (root / "book" / "explorer.md").exists():
        return ""
    values = chapter_values(root, "explorer", sets)
    labels = dict(MODELS)
    lower = lambda x: x[0].lower() + x[1:] if x.startswith("The ") else x  # "the embedded model", "SmolLM2-135M"
    named = [lower(labels.get(m, m)) for m in values["models"]]
    return counts.explorer_sentence(int(values["n_prompts"]), named)


def pipeline_stages(root: Path) -> list[pipeline.Stage] | None:
    """Fig. 1's stages (:func:`arithmech.report.charts.pipeline.stages`), named from the chapters' sources in
    ``root/book``; ``None`` in a book without those chapters (a test book of other pages)."""
    sources = [root / "book" / f"{ch}.md" for ch in pipeline.CHAPTERS]
    return pipeline.stages({p.stem: p.read_text() for p in sources}) if all(p.exists() for p in sources) else None


def write_generated(root: Path, sets: Sequence[str] = ()) -> list[Path]:
    """Before rendering: the parameters table (``book/_generated/parameters.md``), the rules page's tables and
    changelog (``rules.md``), the rules' provenance sentence (``provenance.md``), the Explorer's sentence with its
    prompt count (``explorer.md``, :func:`explorer_intro`; ``sets``: the build's ``--set`` values) and the results box
    per model (``book/_generated/findings.md``: every model's answer sentence, then Fig. 1, the pipeline
    (:func:`arithmech.report.charts.pipeline.pipeline_markdown`), then the boxes; a note when no model has results, a
    warning box for a model whose results folder does not read as one run). Returns the files that changed."""
    boxes, sentences, results_root = [], [], root / "results"
    runs = [(name, label, Context(results_root / name)) for name, label in MODELS]  # each folder's Results
    for name, label, ctx in runs:
        try:
            sentences += [s for s in [findings.results_box(ctx, name, label, part="sentence")] if s]
            box = findings.results_box(ctx, name, label, part="box")
        except ValueError as err:  # a results folder half re-made (e.g. identify re-run, analyze not yet)
            e = str(err).replace(f"{root}{os.sep}", "")  # paths relative to the root, as on the page
            print(f"  warning: no findings box for {name}: {e}", flush=True)
            box = (
                f":::{{admonition}} {label}: results out of step\n:class: warning\n\n`results/{name}/` does not "
                f"read as one run: {e}\n:::"
            )
        boxes += [box] if box else []
        got = accounts_result.stored(AccountsChapter(results=str(results_root)).to_accounts(name))
        accounts = "\n".join(accounts_page.findings_box(got, label, name not in NO_EVIDENCE)).strip()
        boxes += [accounts] if accounts else []
    try:
        rules = findings.rules_page(runs)
    except ValueError as e:
        rules = (
            f"*The rules cannot be decided on results that are out of step: {str(e).replace(f'{root}{os.sep}', '')}*"
        )
    stages = pipeline_stages(root)
    fig1 = pipeline.pipeline_markdown(stages) if stages else ""  # "" in a book without the chapters
    zero_shot, pooled = (Ranking.made(results_root, scope.MODEL, under) for under in ("zero-shot", ""))
    scope_boxes = [b for b in [scope.scope_box(zero_shot, pooled)] if b]  # the first screen
    texts = {
        PARAMETERS: parameters_table(root),
        FINDINGS: "\n\n".join(
            x for x in ([*scope_boxes, *sentences, fig1, *boxes] if boxes else [fig1, NO_RESULTS]) if x
        ),
        RULES: rules,
        PROVENANCE: findings.provenance_sentence(),
        EXPLORER: explorer_intro(root, sets),
    }
    changed = []
    for rel, body in texts.items():
        path = root / rel
        body = "<!-- generated by `python -m arithmech book`; do not edit -->\n" + body + "\n"
        if not path.exists() or path.read_text() != body:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, body)
            changed.append(rel)
    return changed
