"""Every rule's history: what changed, when, and whether the results it decides existed then.

A rule of :mod:`arithmech.claims.rules` can only be called *pre-registered* if it was written — and left
alone — before the results it decides existed. This module records, for every rule, each change to what
it decides, reconstructed from git (``git log --follow -p -- arithmech/claims/rules.py`` and the files the
rules lived in before: ``arithmech/experiments/claims.py``, ``arithmech/experiments/stability.py``,
``arithmech/experiments/casestudy.py``, ``arithmech/smollm.py``). A rule's ``version`` in
:data:`~arithmech.claims.rule_texts.RULES` is the number of its entries here, and :data:`DIGEST` holds a
fingerprint of its current text and of the numbers its decider reads, so a rule edited without an entry fails
``tests/unit/claims/test_changelog.py``.

What counts as a change: anything that can move a verdict (a threshold, what is compared, a new
*inconclusive* outcome, which rows are read) or that makes the rule say something else. Moves between
modules, renames of a variable and the way numbers are printed are not changes.

``results`` says whether **the results this rule decides** existed at that commit, and which run: ``yes``
when a file or an executed chapter in git already held them (``results/`` is git-ignored but for SmolLM2's
folder, so the evidence for the embedded model is the executed chapters and the hand-off notes that quote
measured numbers); ``no`` when git holds none yet. A run made on someone's machine and never recorded cannot
be ruled out; ``no`` means "none recorded".

The entries live in five modules, by period, joined here in time order into :data:`CHANGELOG`: the history
reconstructed from git (:mod:`~arithmech.claims.changelog_git_identify`, identify's rules, and
:mod:`~arithmech.claims.changelog_git_other_rules`, the others, the dropped rules and the digests as of then), the
entries of 2026-11-27 (:mod:`~arithmech.claims.changelog_nov27`), those of 2026-11-28 up to its seventh session
(:mod:`~arithmech.claims.changelog_nov28`) and those since (:mod:`~arithmech.claims.changelog_recent`). This module
holds what reads them: :func:`history`, :func:`version`, :func:`pre_registered`, :func:`digest` and
:func:`decider_constants`.

Adding or editing a rule: append an entry to :mod:`arithmech.claims.changelog_recent` (the next version, today's date,
the commit that makes the change — ``"this commit"`` until it has a hash — what changed, and whether results
existed), bump the rule's ``version`` and update its :data:`DIGEST` (the failing test prints the new one).
"""

from __future__ import annotations

import hashlib
import json
import types
from typing import Callable, TypeGuard

from arithmech.claims.change import Change
from arithmech.claims.changelog_git_identify import IDENTIFY_HISTORY
from arithmech.claims.changelog_git_other_rules import DROPPED as DROPPED  # re-exported: the rules page reads it here
from arithmech.claims.changelog_git_other_rules import GIT_DIGEST, OTHER_HISTORY
from arithmech.claims.changelog_nov27 import NOV27, NOV27_DIGEST
from arithmech.claims.changelog_nov28 import NOV28, NOV28_DIGEST
from arithmech.claims.changelog_recent import RECENT, RECENT_DIGEST

CHANGELOG: tuple[Change, ...] = IDENTIFY_HISTORY + OTHER_HISTORY + NOV27 + NOV28 + RECENT
"""Every entry, in time order within each part: the history reconstructed from git, then the entries appended
since (2026-11-27, then 2026-11-28 on)."""
DIGEST: dict[str, str] = {**GIT_DIGEST, **NOV27_DIGEST, **NOV28_DIGEST, **RECENT_DIGEST}
"""Each rule's fingerprint (:func:`digest`) as of its latest entry: the reconstructed history's
(:data:`arithmech.claims.changelog_git_other_rules.GIT_DIGEST`) updated by the digests logged since."""


def digest(claim: str, rule: str, constants: dict | None = None) -> str:
    """12 hex digits of sha256 over a rule's claim, its rule text and the numbers its decider reads
    (:func:`decider_constants`): changes whenever what it says, or a threshold it decides with, changes."""
    numbers = "" if not constants else "\n" + json.dumps(constants, sort_keys=True)
    return hashlib.sha256(f"{claim}\n{rule}{numbers}".encode()).hexdigest()[:12]


_NUMBER = (int, float)


def _is_number(v) -> TypeGuard[int | float | tuple | frozenset]:
    return (isinstance(v, _NUMBER) and not isinstance(v, bool)) or (
        isinstance(v, (tuple, frozenset)) and bool(v) and all(isinstance(x, _NUMBER) for x in v)
    )


def _codes(code: types.CodeType):
    """``code`` and every code object nested in it (comprehensions, inner functions, lambdas)."""
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def decider_constants(fn: Callable) -> dict[str, float | int | list]:
    """The module-level numbers that decider ``fn`` reads, directly or through the arithmech functions it calls
    (closures included, as :func:`arithmech.claims.rules._controlled` wraps a decider), keyed
    ``module.NAME``: the thresholds a verdict moves with even where the rule's text does not print them
    (e.g. ``arithmech.methods.faithfulness_rule.MIN_CLUSTERS``), and the number literals in their code
    (``share >= 0.5``), keyed ``module.function:literals``. Strings are left out: a message's wording decides
    nothing."""
    out: dict[str, float | int | list] = {}
    seen, todo = set(), [fn]
    while todo:
        f = todo.pop()
        if not isinstance(f, types.FunctionType) or f in seen or not f.__module__.startswith("arithmech"):
            continue
        seen.add(f)
        todo += [c.cell_contents for c in (f.__closure__ or ()) if callable(getattr(c, "cell_contents", None))]
        literals = set()
        for code in _codes(f.__code__):  # one walk: its number literals, then the names it reads
            literals |= {c for c in code.co_consts if isinstance(c, _NUMBER) and not isinstance(c, bool)}
            for name in code.co_names:
                v = f.__globals__.get(name)
                if _is_number(v):
                    out[f"{f.__module__}.{name}"] = (
                        sorted(v) if isinstance(v, frozenset) else list(v) if isinstance(v, tuple) else v
                    )
                elif isinstance(v, types.FunctionType):
                    todo.append(v)
        if literals:
            out[f"{f.__module__}.{f.__qualname__}:literals"] = sorted(literals, key=repr)
    return out


def history(rule_id: str) -> list[Change]:
    """The entries of ``rule_id``, oldest first."""
    return sorted((c for c in CHANGELOG if c.rule == rule_id), key=lambda c: c.version)


def version(rule_id: str) -> int:
    """How many times ``rule_id`` was written or changed (its number of entries)."""
    return len(history(rule_id))


def pre_registered(rule_id: str) -> bool:
    """True iff no version of ``rule_id`` was written after the results it decides existed."""
    h = history(rule_id)
    return bool(h) and not any(c.after_results for c in h)
