"""Fig. 1, the paper's pipeline, drawn for the introduction: identify → analyze → fine-tune.

The paper's Figure 1: "1) *identify* the key components attributed to arithmetic calculations in black-box
LLMs, 2) *analyze* the working mechanism of the key components towards human-understandable explanations,
3) *fine-tune* the key components to precisely improve the mathematical capability of LLMs." Here each stage
is the book chapter that runs it, named by that chapter's own title (its first ``# Name: what it asks`` line of
``book/<chapter>.md``, whose text the publisher reads, so a renamed chapter renames its stage) and linked to it.

* :func:`stages` — the three stages: chapter, name, question (from the chapter sources), method and outcome;
* :func:`pipeline_svg` — a static SVG (no script, no font or file to fetch: it renders offline, in any browser),
  its colours from :mod:`arithmech.report.charts.colours` (red: the key heads, as on every chart, and only them);
* :func:`pipeline_markdown` — the SVG inline in a ``<figure>`` with its caption, the markdown block the
  introduction includes (``book/_generated/pipeline.md`` through
  :func:`arithmech.report.build.generate.write_generated`).

No number is drawn: the figure is the same for every model; the sentence above it and the table under it
carry each model's results.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arithmech.report.charts import colours

# What each stage does in the paper (§4, §5, §6) and what it hands to the next one.
STEPS = (
    ("identify", "path patching of every head and MLP at the last token (Fig. 2); knockout (Fig. 3)", "the key heads"),
    (
        "analyze",
        "what the key heads attend to (Fig. 5, 7); what the MLPs write, layer by layer (Fig. 6)",
        "operand and operator heads; MLPs that compute",
    ),
    (
        "finetune",
        "tune only the key heads; compare with full SFT and with as many random heads (Table 1)",
        "math gained, general skills kept?",
    ),
)
CHAPTERS = tuple(ch for ch, _, _ in STEPS)  # the chapters whose sources name the stages (book/<chapter>.md)
WIDTH, HEIGHT, BOX_W, GAP = 680, 150, 196, 46


@dataclass(frozen=True)
class Stage:
    chapter: str  # file stem: book/<chapter>.md, built to <chapter>.html
    name: str  # the chapter's name ("Identify")
    question: str  # the rest of its title ("which heads do the arithmetic?")
    method: str
    outcome: str


def _title(chapter: str, source: str) -> tuple[str, str]:
    """``("Identify", "which heads do the arithmetic?")`` from the first ``# `` line of a chapter's source."""
    for line in source.splitlines():
        if line.startswith("# "):
            name, _, rest = line[2:].partition(":")
            return name.strip(), rest.strip()
    raise ValueError(f"book/{chapter}.md has no '# ' title line")


def stages(sources: Mapping[str, str]) -> list[Stage]:
    """The pipeline's three stages, named from the chapters' sources (chapter → its markdown text)."""
    return [Stage(ch, *_title(ch, sources[ch]), method, outcome) for ch, method, outcome in STEPS]


def _wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap at ``width`` characters."""
    lines, cur = [], ""
    for w in text.split():
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    return lines + ([cur] if cur else [])


def pipeline_svg(stages: Sequence[Stage]) -> str:
    """Fig. 1 as one ``<svg>`` element: three linked boxes (name, question, method, outcome) joined by arrows."""
    ink, key = colours.ROLES["ink"], colours.colour("selection", "key")
    esc = html.escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'style="max-width:{WIDTH}px" role="img" aria-labelledby="fig1-title" '
        'font-family="Helvetica, Arial, sans-serif">',
        '<title id="fig1-title">Fig. 1: the pipeline, identify, analyze, fine-tune</title>',
        f'<defs><marker id="fig1-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{ink["mark"]}"/></marker></defs>',
    ]
    for i, s in enumerate(stages):
        x = i * (BOX_W + GAP)
        out.append(f'<a href="{s.chapter}.html"><g>')
        out.append(
            f'<rect x="{x + 1}" y="1" width="{BOX_W - 2}" height="{HEIGHT - 2}" rx="8" fill="{ink["white"]}" '
            f'stroke="{ink["mark"]}" stroke-width="1.5"/>'
        )
        out.append(
            f'<text x="{x + 12}" y="24" font-size="15" font-weight="700" fill="{ink["black"]}">'
            f"{i + 1}. {esc(s.name)}</text>"
        )
        y = 42
        for line in _wrap(s.question, 30):
            out.append(
                f'<text x="{x + 12}" y="{y}" font-size="11.5" font-style="italic" fill="{ink["muted"]}">'
                f"{esc(line)}</text>"
            )
            y += 15
        y += 4
        for line in _wrap(s.method, 33):
            out.append(f'<text x="{x + 12}" y="{y}" font-size="11" fill="{ink["black"]}">{esc(line)}</text>')
            y += 14
        ends, tone = _wrap(f"→ {s.outcome}", 30), key if i == 0 else ink["black"]  # red: the key heads only
        for j, line in enumerate(ends):
            out.append(
                f'<text x="{x + 12}" y="{HEIGHT - 12 - 15 * (len(ends) - 1 - j)}" font-size="11.5" '
                f'font-weight="700" fill="{tone}">{esc(line)}</text>'
            )
        out.append("</g></a>")
        if i < len(STEPS) - 1:
            x0, x1 = x + BOX_W + 4, x + BOX_W + GAP - 4
            out.append(
                f'<line x1="{x0}" y1="{HEIGHT / 2}" x2="{x1}" y2="{HEIGHT / 2}" stroke="{ink["mark"]}" '
                'stroke-width="2" marker-end="url(#fig1-arrow)"/>'
            )
    out.append("</svg>")
    return "".join(out)


def pipeline_markdown(stages: Sequence[Stage]) -> str:
    """The introduction's Fig. 1: the SVG inline (its boxes link to the chapters) in a ``<figure>`` whose caption
    names and links each chapter; one raw-HTML block without blank lines, as MyST passes it through."""
    links = ", then ".join(f'<a href="{s.chapter}.html">{html.escape(s.name)}</a>' for s in stages)
    caption = (
        f"<strong>Fig. 1 — the paper's pipeline, one chapter per stage:</strong> {links}. The key heads "
        "(red) found by the first stage are what the other two study and tune."
    )
    return (
        f'<figure class="arithmech-pipeline" style="margin:1em 0">{pipeline_svg(stages)}'
        f'<figcaption style="font-size:0.9em">{caption}</figcaption></figure>'
    )
