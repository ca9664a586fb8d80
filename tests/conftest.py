"""Fixtures shared by every tier. One name means one thing everywhere:

=====================  ==============================================================================
``tiny_llama``          a random 3-layer GQA Llama (vocabulary 50), once per attention implementation
                        (eager, sdpa); built by ``factories.make_tiny_llama``
``token_ids``           ``(3, 9)`` random token ids for ``tiny_llama``
``embedded_model``      the shipped embedded model: ``(model, tokenizer, geometry)``, loaded once
``embedded_tokenizer``  the embedded model's word-level tokenizer, built in code (no model load)
``word_llama_fig8``     a random 5-layer GQA Llama over ``embedded_tokenizer`` plus 8 Fig. 8 samples:
                        ``(model, tokenizer, samples)``
``one_thread``          one intra-op torch thread for the whole session (autouse)
=====================  ==============================================================================

Tier-local fixtures live in their folder: ``built_book``, ``toy_book`` (``book/``), ``smollm2``
(``integration/test_smollm2.py``). Tiers: ``unit/`` (one function, no reference needed), ``parity/``
(an implementation equals an independent reference or an exact invariant), ``integration/`` (CLI,
embedded model end to end, SmolLM2), ``faults/`` (fault injection: hostile results folders, two writers,
forged messages; marker ``faults``), ``book/`` (book build and headless browser). The ``slow``
marker (``pytest -m "not slow"``, ``make test-fast``) leaves out the book and SmolLM2.

Inside a tier the folders mirror the package: the tests of ``arithmech/methods/patching.py`` are
``unit/methods/test_patching.py`` and ``parity/methods/test_patching.py``, those of ``arithmech/cli.py``
``unit/test_cli.py`` (``tests/unit/test_project.py`` checks it for ``unit/`` and ``parity/``). At a tier's
root sit only the project-wide checks (``unit/test_project.py``, ``test_prose.py``, ``test_shipped_results.py``,
``test_book_sources.py``) and the cross-cutting end-to-end files of ``integration/`` (the CLI contract, the
Reproduce page's commands, resuming, SmolLM2, the shipped embedded model, two-process training); ``book/`` is about the built
book, not a module. Every test folder but ``book/`` is a package (``__init__.py``), so a basename may repeat
across tiers; ``factories`` (this folder) is importable from all of them.
"""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")     # no hub here: fail fast instead of retrying

import pytest
import torch
from factories import make_tiny_llama


@pytest.fixture(params=["eager", "sdpa"])
def tiny_llama(request):
    """A random 3-layer GQA Llama (4 query / 2 kv heads, head_dim 12, d_model 40, vocab 50), per attention."""
    return make_tiny_llama(request.param)


@pytest.fixture
def token_ids():
    """``(3, 9)`` token ids in ``[0, 50)`` for ``tiny_llama``, seeded."""
    return torch.randint(0, 50, (3, 9), generator=torch.Generator().manual_seed(1))


@pytest.fixture(scope="session")
def embedded_model():
    """The shipped embedded model as ``load_model("embedded")`` returns it: ``(model, tokenizer, geometry)``.
    Loaded once per session; tests must not change its weights."""
    from arithmech.core.models import load_model
    return load_model("embedded")


@pytest.fixture(scope="session")
def embedded_tokenizer():
    """The embedded model's word-level tokenizer (every digit its own token), built in code."""
    from arithmech.embedded.train import build_tokenizer
    return build_tokenizer()


@pytest.fixture(scope="module")
def word_llama_fig8(embedded_tokenizer):
    """A random 5-layer GQA Llama over the embedded model's word-level tokenizer, plus 8 Fig. 8 samples:
    ``(model, tokenizer, samples)``."""
    from arithmech.data import pairs
    tok = embedded_tokenizer
    model = make_tiny_llama(n_layers=5, vocab=len(tok), seed=3)
    samples, _ = pairs.make_pairs(tok, "fig8", n=8, seed=0, draw=pairs.Draw("first", 0, 1))
    return model, tok, samples


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """Every test runs with one intra-op torch thread, whatever ``OMP_NUM_THREADS`` says. The models here
    are tiny (or 135M parameters): one thread is faster than two, and far faster on a busy machine where
    two spinning threads compete (``make test-fast``: ~50 s instead of ~200 s on 2 loaded cores). The
    book's notebooks run in their own kernels and are not affected. Restored after the session."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
