"""``python -m arithmech <command>``: one subcommand per step of the paper's pipeline, and all of argparse.

Every command is generated from its step's config (its wing's ``config``, e.g. :mod:`arithmech.identify.config`): one
flag per field, named after the field (``n_random`` → ``--n-random``; booleans also as ``--no-…``), with the field's
default and help. ``--model`` is kept as a short name for ``--model-name``. The command builds the config (which checks
every value), then imports its step's module and calls one function with it, so everything a command does is reachable
(and tested) from Python.

The input contract: every argument is checked before any model loads (and before torch is imported); a
violation is one line (``error: …``) and exit code 2, Ctrl-C is one line and exit code 130, never a
traceback. A run whose estimated peak memory (:mod:`arithmech.core.estimate`) exceeds what the machine has
free is refused the same way, naming the flag to lower. Messages quote the values they show
(:func:`arithmech.core.inputs.quoted`), and what is printed passes :func:`arithmech.core.inputs.one_line` last: a path
holding a newline cannot print a second, forged line.

>>> python -m arithmech identify --model embedded --task addition --n-samples 128
>>> python -m arithmech identify --help            # exactly the fields of arithmech.identify.config.Identify

One command is not a step: ``lab`` (``make lab``) starts JupyterLab on the chapters (:mod:`arithmech.lab`), and
passes the arguments it does not know on to ``jupyter lab``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arithmech import lab
from arithmech.core import admission, inputs
from arithmech.core.config import SHORT_FLAGS, fields, flag
from arithmech.data.pairfile import check_task
from arithmech.embedded.planted_config import TrainPlanted
from arithmech.pipeline.registry import STEPS, Step
from arithmech.report.build import config as book_config
from arithmech.steps import config_training


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``error: <what> (see <prog> --help)``, exit 2."""

    def error(self, message: str):  # noqa: D102 (argparse's hook)
        print(inputs.one_line(f"error: {message} (see `{self.prog} --help`)"), file=sys.stderr)
        sys.exit(2)


# ------------------------------------------------------------------------ what the other commands print
def _print_trained(out) -> None:
    print(f"saved the embedded model to {out}")
    print((out / "accuracy.json").read_text())


def _print_embedded_accuracy(r: dict) -> None:
    print(json.dumps(r, indent=2))
    held = r["heldout"]["splits"]
    print(
        f"in-distribution answer-token accuracy: {r['arithmetic_answer_token_accuracy']:.2%} "
        f"on {r['n_samples']} prompts; held-out exact match: "
        + ", ".join(f"{k} {v['exact_match']['acc']:.2%} (n={v['exact_match']['n']})" for k, v in held.items())
    )


# ------------------------------------------------------------------------------ the command table
@dataclass(frozen=True)
class Command:
    """A subcommand: its config class, the module and function it calls with the config (imported only
    when the command runs: torch loads after every argument was checked), and what it prints. The pipeline's
    steps are :data:`arithmech.pipeline.registry.STEPS`, each printing its module's ``summary``."""

    config: type
    module: str
    function: str
    show: Callable
    takes_command: bool = False  # also pass the command line, recorded in the results


def _step_command(step: Step) -> Command:
    return Command(step.config, step.module, "run", lambda result: print(step.summary(result)), step.takes_command)


COMMANDS = {
    **{name: _step_command(step) for name, step in STEPS.items()},  # the pipeline's steps
    "train-embedded": Command(config_training.TrainEmbedded, "arithmech.embedded.train", "run", _print_trained),
    "train-planted": Command(TrainPlanted, "arithmech.embedded.planted_train", "run", print),
    "accuracy": Command(
        config_training.EmbeddedAccuracy, "arithmech.embedded.train", "run_accuracy", _print_embedded_accuracy
    ),
    "book": Command(book_config.Book, "arithmech.report.build.book", "run", lambda times: None),
}
ALIASES = {name: [short] for name, short in SHORT_FLAGS.items()}  # beside each field's own flag


def _one(kind: type):
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None

    return parse


def _list_of(kind: type):
    def parse(text: str) -> tuple:
        return tuple(_one(kind)(x.strip()) for x in text.split(",") if x.strip())

    return parse


def add_config_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """One flag per field of config class ``cls``, named after the field, with its default and help; the
    values are checked when the config is built (:class:`arithmech.core.config.Config`)."""
    for name, default, meta, kind, many in fields(cls):
        names = [flag(name)] + ALIASES.get(name, [])
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        help_ = (meta["help"] if "(default" in meta["help"] else f"{meta['help']} (default: {shown})").replace(
            "%", "%%"
        )
        if kind is bool:
            parser.add_argument(*names, dest=name, action=argparse.BooleanOptionalAction, default=default, help=help_)
        elif meta.get("repeat"):
            parser.add_argument(*names, dest=name, action="append", default=default, metavar="VALUE", help=help_)
        else:
            parser.add_argument(
                *names,
                dest=name,
                type=_list_of(kind) if many else _one(kind),
                default=default,
                metavar=name.upper(),
                help=help_,
            )


def _run(a: argparse.Namespace) -> None:
    command = COMMANDS[a.command]
    config = command.config(**{name: getattr(a, name) for name, *_ in fields(command.config)})  # checked here
    admission.check(config)  # memory: refused here when the run cannot fit, before torch
    module = importlib.import_module(command.module)  # torch loads here, after every argument was checked
    run = getattr(module, command.function)
    line = "python -m arithmech " + " ".join(shlex.quote(x) for x in a.argv)
    try:
        command.show(run(config, command=line) if command.takes_command else run(config))
    finally:  # a failed step lets go of its results folder's lock
        from arithmech.core import results  # loaded with the step

        results.end_writes()


def _port(text: str) -> int:
    port = _one(int)(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port}: a port is 1 to 65535 (0: any free one)")
    return port


def _lab(a: argparse.Namespace) -> int:
    return lab.run(a.port, Path(a.root), [x for x in a.extra if x != "--"])


def add_lab(sub) -> None:
    """The ``lab`` command: its two flags; what it does not know goes on to ``jupyter lab`` (:func:`main`)."""
    s = sub.add_parser(
        "lab",
        help=lab.__doc__.splitlines()[0],
        description=lab.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Arguments after -- go to jupyter lab as they are.",
    )
    s.add_argument(
        "--port",
        type=_port,
        default=8888,
        help="port on 127.0.0.1 (default 8888, or a free one if taken; 0: any free one)",
    )
    s.add_argument("--root", default=".", help="the folder JupyterLab shows (default: the current one)")
    s.set_defaults(func=_lab)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m arithmech", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, command in COMMANDS.items():
        # cannot fire: a dataclass always has a docstring (@dataclass writes its signature when none is given)
        assert command.config.__doc__ is not None
        s = sub.add_parser(name, help=command.config.__doc__.splitlines()[0], description=command.config.__doc__)
        add_config_arguments(s, command.config)
        s.set_defaults(func=_run)
    add_lab(sub)
    return p


# Checks that run on the raw arguments before argparse, so that a wrong task file is named even when other
# flags are wrong too: command → {flag: check}.
EARLY = {
    "identify": {"--task": check_task},
    "counterfactuals": {"--task": check_task},
    "stability": {"--task": check_task},
}


def early_checks(argv: list[str]) -> None:
    """Run :data:`EARLY`'s checks on ``--flag value`` / ``--flag=value`` of ``argv`` (argparse checks the rest)."""
    for name, check in EARLY.get(argv[0] if argv else "", {}).items():
        for i, a in enumerate(argv):
            if a == name and i + 1 < len(argv):
                check(argv[i + 1])
            elif a.startswith(name + "="):
                check(a.split("=", 1)[1])


def main(argv: list[str] | None = None) -> int | None:
    """Run the command ``argv`` (the process's arguments by default); returns ``lab``'s exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if "OMP_NUM_THREADS" in os.environ:  # before torch loads: no libgomp warning for "" or "x"
        os.environ["OMP_NUM_THREADS"] = inputs.thread_env(os.environ)["OMP_NUM_THREADS"]
    try:
        early_checks(argv)
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra and args.command != "lab":  # only lab passes arguments on (to jupyter lab)
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.argv, args.extra = list(argv), extra
        return args.func(args)
    except KeyboardInterrupt:
        # a chapter's kernel client (nbclient, asyncio) may hold a task the interrupt killed: asyncio would log
        # "Task exception was never retrieved" and its traceback when it is collected at exit, after this line
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        print(
            "interrupted: re-run the same command to finish (identify and table1 resume where they stopped; "
            "a set interrupted while it was moved in is finished or dropped by the next command)",
            file=sys.stderr,
        )
        sys.exit(130)
    except (FileNotFoundError, ValueError, OSError, ImportError) as e:  # ResultsError is a ValueError
        print(inputs.one_line(f"error: {e}"), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
