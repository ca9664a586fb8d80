"""``python -m arithmech <command>``: one subcommand per step of the paper's pipeline.

Each subcommand is a thin wrapper: it parses arguments and calls one package function,
so everything a command does is reachable (and tested) from Python.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys


def _train_embedded(a: argparse.Namespace) -> None:
    from arithmech.embedded.train import train
    out = train(a.out, steps=a.steps, batch_size=a.batch_size, seed=a.seed)
    print(f"saved the embedded model to {out}")
    print((out / "accuracy.json").read_text())


def _embedded_accuracy(a: argparse.Namespace) -> None:
    from arithmech.embedded.train import evaluate
    from arithmech.core.models import load_model
    model, tok, _ = load_model(a.model)
    r = evaluate(model, tok, seed=a.seed)
    print(json.dumps(r, indent=2))
    print(f"held-out answer-token accuracy: {r['arithmetic_answer_token_accuracy']:.2%} "
          f"on {r['n_samples']} prompts")


# Subcommands that live in their own module, which defines ``add_cli(subparsers)``. A module is
# imported only when its command runs, so one step's import cost (or breakage) never reaches another.
PLUGINS = {
    "identify": ("arithmech.methods.identify", "path patching, key heads, knockout, transfer (paper §4.1, §5.1)"),
    "analyze": ("arithmech.methods.analyze", "attention of key heads by token role, MLP projections (§4.2, §5.2)"),
    "finetune": ("arithmech.finetune.runner", "precise SFT of key heads vs full SFT, benchmarks (§4.3, §5.3)"),
    "book": ("arithmech.report.book", "execute every chapter with papermill and build the book"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m arithmech", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("train-embedded", help="train the embedded arithmetic model (deterministic, ~12 min on 2 cores)")
    s.add_argument("--out", default=None, help="output folder (default: the package's embedded/model/)")
    s.add_argument("--steps", type=int, default=1200)
    s.add_argument("--batch-size", type=int, default=64)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=_train_embedded)

    s = sub.add_parser("accuracy", help="held-out accuracy of a model on the paper's templates (fresh draws)")
    s.add_argument("--model", default="embedded")
    s.add_argument("--seed", type=int, default=1)
    s.set_defaults(func=_embedded_accuracy)

    for name, (modname, help_) in PLUGINS.items():
        if name == command:
            importlib.import_module(modname).add_cli(sub)
        else:
            sub.add_parser(name, help=help_, add_help=False)
    return p


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and argv[0] in PLUGINS else None
    args = build_parser(command).parse_args(argv)
    try:
        args.func(args)
    except (FileNotFoundError, ValueError, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
