"""Step configs: one frozen, documented dataclass per step, every default written once.

A step's config (:mod:`arithmech.identify.config` and the other wings' `config`) is the single place its settings live.
The command line is generated from it (:mod:`arithmech.cli`: one flag per field, ``--n-samples`` for ``n_samples``), a
chapter builds it from its papermill parameters, and the book plan validates ``--set`` values by building it. Lower
functions take their settings from the config, so no default can disagree with another.

A field is declared with :func:`option`, which records its help text and its bounds::

    @dataclass(frozen=True)
    class Identify(Config):
        n_samples: int = option(256, "pairs drawn per task", low=1)
        answer_token: str = option("last-digit", "which answer token", choices=("last-digit", "first"))

Building a config checks every field (type from the annotation, choices, bounds) and raises one
:class:`ValueError` line naming the flag, the value, what is allowed and what to do. Nothing here imports
torch: a wrong argument is refused before any model loads.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Mapping
from typing import Any, TypeVar


def option(
    default: Any,
    help: str,
    *,
    choices: tuple | None = None,
    low: float | None = None,
    high: float | None = None,
    reuse: bool = True,
    repeat: bool = False,
) -> Any:
    """A config field: ``default`` (written here once), ``help`` (the flag's help and the field's doc),
    allowed ``choices`` or bounds ``low <= value <= high``. ``reuse=False``: the field does not change the
    step's files (a batch size, ``overwrite``), so :meth:`Config.reuse_key` leaves it out. ``repeat``: a list
    given one value per flag (``--set a=1 --set b=2``) instead of comma-separated."""
    if isinstance(default, list):
        default = tuple(default)
    return dataclasses.field(
        default=default,
        metadata={"help": help, "choices": choices, "low": low, "high": high, "reuse": reuse, "repeat": repeat},
    )


def flag(name: str) -> str:
    """The command-line flag of field ``name``: ``n_samples`` → ``--n-samples``."""
    return "--" + name.replace("_", "-")


SHORT_FLAGS = {"model_name": "--model"}  # a short flag kept beside the field's own (book/reproduce.md's commands)


def command_line(step: str, config: Config) -> str:
    """The command that builds ``config``: ``python -m arithmech STEP --model M`` and the flag of every field that
    changes the step's files (:meth:`Config.reuse_key`) and differs from its default, e.g. ``python -m arithmech
    arms --model embedded --suite toy --steps 30 --batch-size 32``. Run from the repository root, it makes the
    same files. The results folder is named only when it is a relative path (the record lives in it; an absolute
    one would put this machine's paths in the record)."""
    name = getattr(config, "model_name")  # noqa: B009 (every step's config has it, the base class does not)
    parts = ["python", "-m", "arithmech", step, SHORT_FLAGS["model_name"], str(name)]
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name == "model_name" or value == f.default or value is None:
            continue
        if f.name == "results":
            if not value.startswith("/") and not value.startswith("~"):
                parts += [flag(f.name), value]
            continue
        if not f.metadata.get("reuse", True):
            continue
        if isinstance(value, bool):
            parts.append(flag(f.name) if value else "--no-" + flag(f.name)[2:])
        elif isinstance(value, tuple) and f.metadata.get("repeat"):
            for v in value:
                parts += _given(f.name, _text(v))
        elif isinstance(value, tuple):
            parts += _given(f.name, ",".join(map(_text, value)))
        else:
            parts += _given(f.name, _text(value))
    return " ".join(shlex.quote(p) for p in parts)


def _text(v) -> str:
    """A value as the command line writes it: floats by ``repr``, which parses back exactly."""
    return repr(v) if isinstance(v, float) else str(v)


def _given(name: str, text: str) -> list[str]:
    """``--flag value``, or ``--flag=value`` where the value starts with "-" (``-5e-05`` is no flag)."""
    return [f"{flag(name)}={text}"] if text.startswith("-") else [flag(name), text]


def _kind(annotation) -> tuple[type, bool]:
    """(element type, is a tuple) of a field annotation such as ``int``, ``float``, ``tuple[int, ...]``,
    ``str | None``: the string of a module with ``from __future__ import annotations``, or the type itself."""
    a = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    a = a.replace(" ", "").replace("|None", "").replace("typing.", "")
    if a.startswith("tuple["):
        return {"int": int, "str": str, "float": float}[a[6:].split(",")[0].rstrip("]")], True
    return {"int": int, "float": float, "str": str, "bool": bool}[a], False


def _check_one(where: str, kind: type, value: Any, meta: Mapping) -> Any:
    """``value`` of one field, checked and converted (int → float); ``where`` names it in a refusal."""
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where}{value!r}: expected true or false")
        return value
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(
            f"{where}{value!r}: expected {'an integer' if kind is int else 'a number' if kind is float else 'a string'}"
        )
    if kind is float and not math.isfinite(value):  # type: ignore[arg-type]
        raise ValueError(f"{where}{value!r}: expected a finite number")
    if meta["choices"] is not None and value not in meta["choices"]:
        raise ValueError(f"{where}{value!r}: use one of {', '.join(map(str, meta['choices']))}")
    low, high = meta["low"], meta["high"]
    if (low is not None and value < low) or (high is not None and value > high):
        rng = (
            f"in [{low}, {high}]"
            if low is not None and high is not None
            else (f">= {low}" if low is not None else f"<= {high}")
        )
        raise ValueError(
            f"{where}{value!r} is {'below ' + str(low) if low is not None and value < low else 'above ' + str(high)}: "
            f"expected a value {rng}"
        )
    return value


_C = TypeVar("_C", bound="Config")


@dataclasses.dataclass(frozen=True)
class Config:
    """Base of every step config: checks each field when built (see the module docstring)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and "None" in str(f.type):
                continue
            kind, many = _kind(f.type)
            where = self.label(f.name)
            if many:
                if not isinstance(value, (list, tuple)):
                    raise ValueError(f"{where}{value!r}: expected a list")
                if not value:
                    raise ValueError(f"{where}{list(value)!r}: expected at least one value")
                value = tuple(_check_one(where, kind, v, f.metadata) for v in value)
            else:
                value = _check_one(where, kind, value, f.metadata)
            object.__setattr__(self, f.name, value)
        self.check()

    @classmethod
    def label(cls, name: str) -> str:
        """How a refusal names field ``name``: its flag (``--n-samples 0: …``)."""
        return flag(name) + " "

    def check(self) -> None:
        """Rules between fields (a subclass overrides it); the fields themselves are checked already."""

    @classmethod
    def from_dict(cls, values: dict, where: str = "") -> Config:
        """The config from ``values``, refusing names it has no field for (one line naming them)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(
                f"{where or cls.__name__}: unknown parameter(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(sorted(names))}"
            )
        return cls(**values)

    def replace(self: _C, **changes: Any) -> _C:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def reuse_key(self) -> dict:
        """The fields that change the step's files: a result set made with the same values is reused."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.metadata.get("reuse", True)}


def fields(cls: type) -> list[tuple[str, Any, dict, type, bool]]:
    """``(name, default, metadata, element type, is a tuple)`` of each field of config class ``cls``, in order."""
    return [(f.name, f.default, dict(f.metadata), *_kind(f.type)) for f in dataclasses.fields(cls)]
