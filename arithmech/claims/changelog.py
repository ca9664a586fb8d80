"""Every rule's history: what changed, when, and whether the results it decides existed then.

A rule (:class:`arithmech.claims.rule.Rule`) can only be called *pre-registered* if it was written — and left alone —
before the results it decides existed. ``changelog.toml`` beside this module records, for every rule, each change to
what it decides, reconstructed from git (``git log --follow -p`` of the rules and of the files they lived in before:
``arithmech/experiments/claims.py``, ``arithmech/experiments/stability.py``, ``arithmech/experiments/casestudy.py``,
``arithmech/smollm.py``) and appended to since. :func:`read` parses it once into frozen values::

    >>> log = read()
    >>> log.changes[0]
    Change(rule='key-heads-exist', version=1, date='2026-11-23', commit='4cef7ec', what='written: …', results='yes: …')
    >>> [c.version for c in history("stages")], version("stages"), pre_registered("stages")
    ([1, 2, 3, 4], 4, False)

A rule's ``version`` is the number of its entries, and ``log.digests`` holds a fingerprint (:func:`digest`) of its
current text and of the numbers its decider reads (:func:`decider_constants`), so a rule edited without an entry
fails ``tests/unit/claims/test_changelog.py``.

What counts as a change: anything that can move a verdict (a threshold, what is compared, a new *inconclusive*
outcome, which rows are read) or that makes the rule say something else. Moves between modules, renames of a variable
and the way numbers are printed are not changes.

``results`` says whether **the results this rule decides** existed at that commit, and which run: ``yes`` when a
file or an executed chapter in git already held them (``results/`` is git-ignored but for SmolLM2's folder, so the
evidence for the embedded model is the executed chapters and the hand-off notes that quote measured numbers); ``no``
when git holds none yet. A run made on someone's machine and never recorded cannot be ruled out; ``no`` means "none
recorded".

Adding or editing a rule: append a ``[[change]]`` to ``changelog.toml`` (the rule's next version, today's date, the
commit that makes the change — ``"this commit"`` until it has a hash — what changed, and whether results existed),
bump the rule's ``version`` and set its digest in the file's ``[digest]`` (the failing test prints the new one).

Rule sets decided outside the claims table (the accounts' signatures, the planted model's scores) are logged here
too, each under one id named in ``[rule_set]`` with where its fingerprint comes from: a function returning the
sha256 its results record (``arithmech.accounts.rules.rules_sha256``), or a text hashed as it stands. Their digest is
that hash's first 12 digits, checked the same way; their own tests also check, in git, that the rules were
committed before the results.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeGuard

PATH = Path(__file__).with_name("changelog.toml")
FIELDS = {"version", "date", "commit", "what", "results"}


@dataclass(frozen=True)
class Change:
    """One version of one rule: ``rule`` id, its ``version`` (1, 2, …), the ``date`` and ``commit`` that made
    it, ``what`` changed, and ``results``: "yes: <which run>" or "no: <why none>"."""

    rule: str
    version: int
    date: str
    commit: str
    what: str
    results: str

    @property
    def after_results(self) -> bool:
        """Whether the results this rule decides already existed when this version was written."""
        return self.results.startswith("yes")


@dataclass(frozen=True)
class Changelog:
    """``changelog.toml`` read: ``changes`` (every entry of a living rule, in the file's order), ``dropped`` (the
    entries of rules that no longer exist), ``digests`` (rule id → its fingerprint as of its latest entry) and
    ``rule_sets`` (a rule set's id → the dotted name of what its fingerprint is computed from)."""

    changes: tuple[Change, ...]
    dropped: tuple[Change, ...]
    digests: Mapping[str, str]
    rule_sets: Mapping[str, str]


def _entries(tables: list[dict]) -> tuple[Change, ...]:
    """One :class:`Change` per rule a ``[[change]]`` table names (``version.<rule> = n``), in the file's order."""
    for t in tables:
        if set(t) != FIELDS:
            raise ValueError(f"changelog.toml: an entry has the keys {sorted(t)}, not {sorted(FIELDS)}: {t}")
    return tuple(
        Change(rule, v, t["date"], t["commit"], t["what"], t["results"])
        for t in tables
        for rule, v in t["version"].items()
    )


@cache
def read(path: Path = PATH) -> Changelog:
    """The changelog at ``path`` (``changelog.toml``), parsed once per path."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return Changelog(
        _entries(data["change"]),
        _entries(data["dropped"]),
        types.MappingProxyType(data["digest"]),
        types.MappingProxyType(data.get("rule_set", {})),
    )


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
    (closures included, as :func:`arithmech.claims.controls.controlled` wraps a decider), keyed
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
    return sorted((c for c in read().changes if c.rule == rule_id), key=lambda c: c.version)


def version(rule_id: str) -> int:
    """How many times ``rule_id`` was written or changed (its number of entries)."""
    return len(history(rule_id))


def pre_registered(rule_id: str) -> bool:
    """True iff no version of ``rule_id`` was written after the results it decides existed."""
    h = history(rule_id)
    return bool(h) and not any(c.after_results for c in h)
