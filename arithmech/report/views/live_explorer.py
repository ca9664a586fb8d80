"""The live explorer: type any prompt on the book's Explorer page and the embedded model answers in the
browser, from ``file://`` as well as over HTTP, with no server and no network.

Three files, all in the build (``book/_static/vendor/live/``, written by :func:`write_assets`, which
:func:`arithmech.report.build.offline.vendor_assets` calls):

* ``embedded-model.js`` (:func:`model_payload`): the embedded model's safetensors weights, float16 as
  stored, base64 inside one ``window.ARITHMECH_EMBEDDED_MODEL = {...}`` assignment, with its vocabulary,
  its config, the number tokens (Fig. 6c) and the operator words a counterfactual replaces. A script and not
  a data file: Chromium blocks ``fetch()`` of ``file://``, a ``<script src>`` it loads.
* ``model.js`` (``arithmech/report/views/live/``): the tokenizer, the Llama forward pass, path patching and mean
  ablation in plain JavaScript (why not onnxruntime-web: that file's header, and the README).
* ``explorer.js``: the controls and views, DOM nodes only (a typed prompt is shown with ``textContent``).

The page itself carries what depends on a run (:func:`page_html`): the heads to knock out (identify's key
heads, or the top heads standing in where none is key) and **identify's means** (:func:`identify_end_means`):
the reference pool identify's knockout builds (:func:`arithmech.methods.ablation.pool.build_pool`, with the
pool size, seed, answer-token rule, shots and templates identify recorded in ``run.json``), read where identify
reads it for a prompt with no family of its own (Fig. 4's free text): the mean over every family's X_c at the
same position counted from END, here END itself (the knockout writes there only).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import torch

from arithmech.core.names import EMBEDDED_DIR
from arithmech.data import pairs
from arithmech.data import templates as templates_module
from arithmech.data.draw import Draw
from arithmech.methods.ablation.pool import pool_prompts
from arithmech.methods.ablation.pool_cache import cached_pool
from arithmech.methods.explorer import OPERATOR_WORDS
from arithmech.methods.mlp import number_tokens

LIVE_DIR = "vendor/live"  # under book/_static (offline.STATIC_DIR), copied to _build/html/_static
MODEL_JS = "embedded-model.js"
SOURCES = ("model.js", "explorer.js")  # arithmech/report/views/live/, copied as they are
HERE = Path(__file__).resolve().parent / "live"
NEUTRAL = {"symbol": "@", "word": "nothing"}  # X_c's operator: one of identify's neutral symbols / words (fixed here)
assert NEUTRAL["symbol"] in templates_module.NEUTRAL_SYMBOLS and NEUTRAL["word"] in templates_module.NEUTRAL_WORDS


def model_payload() -> dict:
    """What ``embedded-model.js`` assigns, from the shipped model (:data:`EMBEDDED_DIR`): ``config``, ``tokens``
    (by id), ``tensors`` (name → [offset in float16 units, shape]), ``data`` (base64 of every tensor's float16
    bytes, little-endian, in file order), ``numbers`` ([id, text] of the number tokens), ``operators`` and
    ``neutral`` (the counterfactual's words)."""
    from safetensors import safe_open
    from transformers import AutoTokenizer

    cfg = json.loads((EMBEDDED_DIR / "config.json").read_text())
    tok = AutoTokenizer.from_pretrained(EMBEDDED_DIR)
    tensors, chunks, offset = {}, [], 0
    with safe_open(EMBEDDED_DIR / "model.safetensors", "pt") as f:
        for name in f.keys():
            t = f.get_tensor(name)
            if t.dtype != torch.float16:
                raise ValueError(f"{name}: {t.dtype}; the page decodes float16 weights only")
            chunks.append(t.contiguous().numpy().astype("<f2").tobytes())
            tensors[name] = [offset, list(t.shape)]
            offset += t.numel()
    rope = cfg.get("rope_parameters") or {}
    config = {
        k: cfg[k]
        for k in (
            "hidden_size",
            "intermediate_size",
            "num_attention_heads",
            "head_dim",
            "num_hidden_layers",
            "vocab_size",
            "rms_norm_eps",
            "max_position_embeddings",
        )
    }
    if cfg["num_key_value_heads"] != cfg["num_attention_heads"] or rope.get("rope_type", "default") != "default":
        raise ValueError("the page's forward pass knows plain multi-head attention with default RoPE only")
    config.update(
        rope_theta=rope.get("rope_theta", cfg.get("rope_theta", 10000.0)),
        unk=tok.unk_token_id,
        bos=tok.bos_token_id,
        special=sorted(tok.all_special_ids),
    )
    ids, labels = number_tokens(tok)
    return {
        "config": config,
        "tokens": tok.convert_ids_to_tokens(list(range(len(tok)))),
        "tensors": tensors,
        "data": base64.b64encode(b"".join(chunks)).decode("ascii"),
        "numbers": [[int(i), s.strip()] for i, s in zip(ids.tolist(), labels)],
        "operators": sorted(OPERATOR_WORDS),
        "neutral": NEUTRAL,
    }


def write_assets(static: str | Path) -> list[Path]:
    """Write ``embedded-model.js`` and copy ``model.js`` / ``explorer.js`` into ``<static>/vendor/live/``.
    The model file is rewritten only when the weights, tokenizer or this module's payload change (a stamp)."""
    out = Path(static) / LIVE_DIR
    out.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256(Path(__file__).read_bytes())
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        h.update((EMBEDDED_DIR / name).read_bytes())
    stamp = f"/* arithmech embedded model for the live explorer; source sha256 {h.hexdigest()} */\n"
    target = out / MODEL_JS
    if not target.exists() or not target.open().readline() == stamp:
        tmp = target.with_suffix(".tmp")
        tmp.write_text(stamp + "window.ARITHMECH_EMBEDDED_MODEL = " + json.dumps(model_payload()) + ";\n")
        tmp.replace(target)
    written = [target]
    for name in SOURCES:
        (out / name).write_bytes((HERE / name).read_bytes())
        written.append(out / name)
    return written


# ------------------------------------------------------------------------------ identify's means
def identify_templates(params: dict) -> list:
    """The templates identify's reference pool was drawn from, in identify's order: each task's
    (:func:`arithmech.data.pairs.select_templates`) and, when it ran the transfer test, the held-out family's."""
    tasks = params.get("tasks") or [params.get("task", "all")]
    out = [t for task in tasks for t in pairs.select_templates(task)]
    if params.get("transfer", True) and params.get("heldout"):
        out += pairs.select_templates(params["heldout"])
    return out


@torch.no_grad()
def identify_end_means(model, tok, params: dict, batch_size: int = 64) -> tuple[torch.Tensor, str]:
    """``(means (L, H*dh), sentence)``: identify's reference-pool means at END for a free prompt.

    The pool is rebuilt exactly as identify's knockout built it (``params``: the parameters identify recorded in
    ``run.json``, :attr:`arithmech.identify.result.Ranking.parameters`; same templates, ``pool_size``, ``seed`` and
    draw, :meth:`~arithmech.data.draw.Draw.from_record`: a seeded draw, so the same X_c), then read with
    ``lookup(None, ·)``, the mean identify gives a prompt without a family: every family's X_c, right-aligned, at
    END."""
    pool = cached_pool(
        model,
        tok,
        pool_prompts(
            tok,
            identify_templates(params),
            int(params.get("pool_size", 512)),
            int(params.get("seed", 0)),
            draw=Draw.from_record(params),
        ),
        batch_size=batch_size,
    )
    z, _ = pool.lookup(None, 1)  # (L, 1, H*dh): END of every pool prompt
    sizes = ", ".join(f"{k} {v}" for k, v in sorted(pool.sizes.items()))
    return z[:, -1].float(), (
        f"identify's reference pool ({sizes} X_c prompts; pool size "
        f"{params.get('pool_size', 512)}, seed {params.get('seed', 0)}), read as identify "
        "reads it for a prompt with no family of its own: the mean over every family's X_c at END"
    )


# ------------------------------------------------------------------------------------ the page
def page_data(
    means: torch.Tensor, key_heads: Sequence[tuple[int, int]], key_label: str = "key", prompt: str = "4 + 3 ="
) -> dict:
    """The page's JSON: the heads to knock out, what they are, the END means ``(L, H*dh)``, the first prompt."""
    return {
        "keyHeads": [[int(l), int(h)] for l, h in key_heads],
        "keyLabel": key_label,
        "means": [[float(v) for v in r] for r in means.tolist()],
        "prompt": prompt,
    }


def page_html(data: dict) -> str:
    """The explorer's HTML: its container, the page's JSON and a loader that adds the three scripts from the
    build's ``_static`` (found from Sphinx's ``data-content_root``; ``../`` for a page in ``book/``)."""
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    files = json.dumps([MODEL_JS, *SOURCES])
    return (
        '<div class="arithmech-live" id="arithmech-live"><p>The live explorer loads here (about 11 MB, once)…</p>'
        "<noscript>The live explorer needs JavaScript.</noscript></div>\n"
        f'<script type="application/json" id="arithmech-live-data">{payload}</script>\n'
        "<script>\n(function () {\n"
        '  var root = document.documentElement.getAttribute("data-content_root") || "../";\n'
        f'  var files = {files}, base = root + "_static/{LIVE_DIR}/";\n'
        "  (function next(i) {\n"
        "    if (i === files.length) return;\n"
        '    var s = document.createElement("script");\n'
        "    s.src = base + files[i];\n"
        "    s.onload = function () { next(i + 1); };\n"
        '    s.onerror = function () { document.getElementById("arithmech-live").textContent = '
        '"The live explorer\'s scripts are missing from this build (" + files[i] + "): build the book with '
        '`python -m arithmech book`."; };\n'
        "    document.head.appendChild(s);\n"
        "  })(0);\n"
        "})();\n</script>"
    )


def write_page(folder: str | Path, data: dict) -> Path:
    """A stand-alone page with the live explorer (``<folder>/book/live.html``, assets in ``<folder>/_static``),
    laid out as the built book is: what the parity test opens."""
    folder = Path(folder)
    write_assets(folder / "_static")
    page = folder / "book" / "live.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(
        '<!DOCTYPE html>\n<html data-content_root="../"><head><meta charset="utf-8">'
        "<title>live explorer</title></head><body>\n" + page_html(data) + "\n</body></html>\n"
    )
    return page
