"""``python -m arithmech <command>``: one subcommand per step of the paper's pipeline.

Each subcommand is a thin wrapper: it parses and checks its arguments, then calls one package
function, so everything a command does is reachable (and tested) from Python. Flags mean the same in
every subcommand: ``--model`` (a short name, folder, ``.gguf`` file or hub id), ``--results`` (the
results root *or* the model's folder: ``results`` and ``results/embedded`` name the same place for
``--model embedded``), ``--seed``, ``--device``, ``--dtype``, ``--overwrite`` (replace this step's own
files; nothing else is ever replaced).

The input contract: every argument is checked before any model loads; a violation is one line
(``error: …``) and exit code 2, Ctrl-C is one line and exit code 130, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from arithmech.core import inputs
from arithmech.core.config import fields, flag
from arithmech.core.inputs import NON_NEGATIVE, POSITIVE, Parser, check_common
from arithmech.data.pairfile import check_task
from arithmech.steps import config as configs


def _non_negative_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"{v} is below 0")
    return v


def _train_embedded(a: argparse.Namespace) -> None:
    from arithmech.embedded.train import train          # lazy: torch loads only once the arguments are checked
    out = train(a.out, steps=a.steps, batch_size=a.batch_size, seed=a.seed, overwrite=a.overwrite,
                weight_decay=a.weight_decay)
    print(f"saved the embedded model to {out}")
    print((out / "accuracy.json").read_text())


def _embedded_accuracy(a: argparse.Namespace) -> None:
    from arithmech.core.models import load_model        # lazy: torch loads only once the arguments are checked
    from arithmech.embedded.train import evaluate       # lazy: as above
    model, tok, _ = load_model(a.model, device=a.device, dtype=a.dtype)
    r = evaluate(model, tok, seed=a.seed)
    print(json.dumps(r, indent=2))
    held = r["heldout"]["splits"]
    print(f"in-distribution answer-token accuracy: {r['arithmetic_answer_token_accuracy']:.2%} "
          f"on {r['n_samples']} prompts; held-out exact match: " + ", ".join(
              f"{k} {v['exact_match']['acc']:.2%} (n={v['exact_match']['n']})" for k, v in held.items()))


# Subcommands that live in their own module, which defines ``add_cli(subparsers)``. A module is
# imported only when its command runs, so one step's import cost (or breakage) never reaches another.
PLUGINS = {
    "finetune": ("arithmech.steps.finetune", "one fine-tune arm (precise SFT of key heads or full SFT), before/after"),
    "table1-arms": ("arithmech.steps.table1", "Table 1 with controls: full, precise key/random heads, seeds, "
                    "per-arm learning rates, verdicts"),
    "accuracy-by-template": ("arithmech.steps.accuracy", "accuracy and p({C}) per template, Wilson intervals"),
    "counterfactuals": ("arithmech.steps.accuracy", "identify with the operator and the operand counterfactual"),
    "stability": ("arithmech.steps.stability", "key heads over seeds, sample sizes, templates, counterfactuals"),
    "book": ("arithmech.report.book", "execute every chapter with papermill and build the book"),
}


# ------------------------------------------------------------------ commands generated from a step's Config
def _report_identify(res) -> None:
    kh = res.key_heads
    names = ", ".join(f"{h['name']} ({h['effect']:+.1%})" for h in kh["heads"][:10]) or "none"
    print("samples kept (X_r): " + ", ".join(f"{t} {i['n_kept']}/{i['n_drawn']}" for t, i in res.info.items()))
    print(f"key heads of {kh['task']} (95% interval of the effect below {kh['threshold']:+.0%}): {names}")
    print(f"wrote identify's files and run.json to {res.params['out']}")


def _report_analyze(r: dict) -> None:
    from arithmech.methods.attention import verdict_lines   # lazy: loaded with the step (torch), see _run_step
    print(r["labels"][["name", "label", "operand", "operator", "rest"]].to_string(index=False))
    print("start-inflection-end:", r["stages"])
    print("\n".join(verdict_lines(r["baseline"])))
    print(f"wrote {r['folder']}/attention_roles.csv, attention_baseline.csv, mlp_projection.csv, top_numbers.csv, "
          "analyze.json")


def _report_beyond(out: dict) -> None:
    s = out["summary"]
    t = s["times"]
    print(f"{s['n_samples']} samples, {s['n_senders']} senders: exact {t['exact_s']:.2f} s, EAP {t['eap_s']:.2f} s, "
          f"EAP-IG ({s['ig_steps']} steps) {t['eap_ig_s']:.2f} s (caches {t['caches_s']:.2f} s)")
    for m in ("eap", "eap_ig"):
        print(f"{m}: Spearman {s[m]['spearman_all']:+.3f} (heads {s[m]['spearman_heads']:+.3f}), top-{s['top']} "
              f"overlap {s[m]['top_overlap']}, key heads {s[m]['key_overlap']}/{s[m]['key_union']}")
    print(f"upstream into {', '.join(s['receivers']) or 'no receiver'} ({s['receivers_from']}): {t['upstream_s']:.2f} s")
    print(f"wrote eap.csv, upstream.csv to {out['folder']}")


# command: (its Config, the module whose run(config) it calls, what it prints)
STEPS = {
    "identify": (configs.Identify, "arithmech.steps.identify", _report_identify),
    "analyze": (configs.Analyze, "arithmech.steps.analyze", _report_analyze),
    "beyond": (configs.Beyond, "arithmech.steps.beyond", _report_beyond),
}
# Short names kept beside a field's own flag (the README's and the issues' commands use them).
ALIASES = {"model_name": ["--model"]}


def _list_of(kind: type):
    def parse(text: str) -> tuple:
        try:
            return tuple(kind(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of {kind.__name__}") from None
    return parse


def _one(kind: type):
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    return parse


def add_config_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """One flag per field of config class ``cls``, named after the field, with its default and help; the
    values are checked when the config is built (:class:`arithmech.core.config.Config`)."""
    for name, default, meta, kind, many in fields(cls):
        names = [flag(name)] + ALIASES.get(name, [])
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        help_ = f"{meta['help']} (default: {shown})".replace("%", "%%")
        if kind is bool:
            parser.add_argument(*names, dest=name, action=argparse.BooleanOptionalAction, default=default, help=help_)
        else:
            parser.add_argument(*names, dest=name, type=_list_of(kind) if many else _one(kind), default=default,
                                metavar=name.upper(), help=help_)


def _run_step(a: argparse.Namespace) -> None:
    cls, module, report = STEPS[a.command]
    config = cls(**{name: getattr(a, name) for name, *_ in fields(cls)})      # checked: one line on a bad value
    step = importlib.import_module(module)     # torch loads here, after every argument was checked
    report(step.run(config))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    p = Parser(prog="python -m arithmech", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    s = sub.add_parser("train-embedded", help="train the embedded arithmetic model (deterministic, ~12 min on 2 cores)")
    s.add_argument("--out", default=None, help="output folder (default: the package's embedded/model/)")
    s.add_argument("--steps", type=POSITIVE, default=1200)
    s.add_argument("--batch-size", type=POSITIVE, default=64)
    s.add_argument("--seed", type=NON_NEGATIVE, default=0)
    s.add_argument("--weight-decay", type=_non_negative_float, default=0.01, help="AdamW weight decay")
    s.add_argument("--overwrite", action="store_true", help="replace the model files in a non-empty --out "
                   "(other files there are kept)")
    s.set_defaults(func=_train_embedded)

    s = sub.add_parser("accuracy", help="accuracy on the paper's templates: fresh draws of trained pairs and the "
                       "embedded model's held-out splits")
    s.add_argument("--model", default="embedded")
    s.add_argument("--seed", type=NON_NEGATIVE, default=1)
    s.add_argument("--device", default="cpu", choices=inputs.DEVICES)
    s.add_argument("--dtype", default="float32", choices=inputs.DTYPES)
    s.set_defaults(func=_embedded_accuracy)

    for name, (cls, _, _) in STEPS.items():
        s = sub.add_parser(name, help=cls.__doc__.splitlines()[0], description=cls.__doc__)
        add_config_arguments(s, cls)
        s.set_defaults(func=_run_step)

    for name, (modname, help_) in PLUGINS.items():
        if name == command:
            importlib.import_module(modname).add_cli(sub, name)
        else:
            sub.add_parser(name, help=help_, add_help=False)
    return p


# Checks that run on the raw arguments before a command's module (and torch) is imported, so that a
# wrong value is refused in well under 2 s: command → {flag: check}.
EARLY = {"identify": {"--task": check_task}, "counterfactuals": {"--task": check_task},
         "stability": {"--task": check_task}}


def early_checks(argv: list[str]) -> None:
    """Run :data:`EARLY`'s checks on ``--flag value`` / ``--flag=value`` of ``argv`` (argparse checks the rest)."""
    for name, check in EARLY.get(argv[0] if argv else "", {}).items():
        for i, a in enumerate(argv):
            if a == name and i + 1 < len(argv):
                check(argv[i + 1])
            elif a.startswith(name + "="):
                check(a.split("=", 1)[1])


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and argv[0] in PLUGINS else None
    if "OMP_NUM_THREADS" in os.environ:                 # before torch loads: no libgomp warning for "" or "x"
        os.environ["OMP_NUM_THREADS"] = inputs.thread_env(os.environ)["OMP_NUM_THREADS"]
    try:
        early_checks(argv)
        args = build_parser(command).parse_args(argv)
        args.argv = list(argv)
        check_common(args)
        args.func(args)
    except KeyboardInterrupt:
        print("interrupted: re-run the same command to finish (identify and table1 resume where they stopped; "
              "a half-moved set is refused by its readers until re-run)", file=sys.stderr)
        sys.exit(130)
    except (FileNotFoundError, ValueError, OSError, ImportError) as e:     # ResultsError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
