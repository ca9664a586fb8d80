"""Shared fixtures: tiny random Llamas built in the test (no files, no network)."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")     # no hub here: fail fast instead of retrying

import pytest
import torch


def tiny_llama(attn: str = "eager", n_layers: int = 3, n_heads: int = 4, n_kv_heads: int = 2,
               head_dim: int = 12, d_model: int = 40, vocab: int = 50, seed: int = 0):
    """A random LlamaForCausalLM with GQA and head_dim != d_model / n_heads, fp32, eval mode."""
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=d_model, intermediate_size=2 * d_model,
                      num_hidden_layers=n_layers, num_attention_heads=n_heads,
                      num_key_value_heads=n_kv_heads, head_dim=head_dim, max_position_embeddings=64)
    cfg._attn_implementation = attn
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(params=["eager", "sdpa"])
def tiny(request):
    return tiny_llama(request.param)


@pytest.fixture
def ids():
    return torch.randint(0, 50, (3, 9), generator=torch.Generator().manual_seed(1))


# ------------------------------------------------------------------------------------------ book
@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """The real book's HTML, built once per session by the book runner (``python -m arithmech book``).

    Built from a temporary copy of ``_config.yml``, ``_toc.yml`` and ``book/`` with
    ``--skip-execute``: it renders the chapter notebooks as they are (executed by the runner
    before commit, or by ``.ci/run`` before the tests), and never rewrites the repository's
    files. ``ARITHMECH_BOOK_HTML=<dir>`` points the tests at an already built ``_build/html``
    instead. Returns ``(root, html_dir)``.
    """
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    given = os.environ.get("ARITHMECH_BOOK_HTML")
    if given:
        return repo, Path(given)
    from arithmech.report.book import build
    root = tmp_path_factory.mktemp("book")
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy2(repo / f, root / f)
    shutil.copytree(repo / "book", root / "book", ignore=shutil.ignore_patterns("_static", ".ipynb_checkpoints"))
    build(root, skip_execute=True)
    return root, root / "_build" / "html"


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models: one intra-op thread is faster than two, and far faster on a busy machine where
    two spinning threads compete. Modules opt in with ``pytestmark = pytest.mark.usefixtures("one_thread")``;
    the thread count is restored after the module."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
