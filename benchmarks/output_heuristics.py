"""Is a model's answer token predictable from the operation, the carried digits and one operand — right or wrong?

A fresh draw of the identify population (``data.pairs.make_pairs``: the same templates, answer token and seed
rules as an identify run), the model's top-1 next token after each X_r prompt, then
:func:`arithmech.data.floors.output_heuristics`: the share of the model's outputs guessed from the outputs on other
problems of the same (operation, carried digits, one operand) group, beside the same guess of the right answers.
Prints one JSON line per task (issue #41, item 1).

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python benchmarks/output_heuristics.py --model smollm2-135m \
        --task addition --n 512 --shots 0
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import torch

from arithmech.core.models import load_model
from arithmech.data import pairs
from arithmech.data.floors import output_heuristics
from arithmech.evals.scoring import predict


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="embedded")
    p.add_argument("--task", nargs="+", default=["addition"])
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--shots", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--answer-token", default="last-digit")
    p.add_argument("--example-sets", type=int, default=16, help="sets of solved examples per template (identify's)")
    a = p.parse_args()
    torch.set_num_threads(1)
    t0 = time.time()
    model, tok, _ = load_model(a.model)
    for task in a.task:
        samples, _ = pairs.make_pairs(tok, task, n=a.n, seed=a.seed, draw=pairs.Draw(a.answer_token, a.shots, a.example_sets))
        ids = predict(model, tok, [s.clean for s in samples], batch_size=32)[:, 0].tolist()
        outputs = [tok.decode([i]).strip() for i in ids]
        h = output_heuristics(samples, outputs)
        digit = [i for i, o in enumerate(outputs) if o.isdigit()]      # a non-digit output is a format failure
        hd = output_heuristics([samples[i] for i in digit], [outputs[i] for i in digit]) if digit else {}
        print(json.dumps({"model": a.model, "task": task, "shots": a.shots, "seed": a.seed, **h,
                          "digit_outputs": len(digit), "on_digit_outputs": hd,
                          "top_outputs": dict(Counter(outputs).most_common(5)),
                          "seconds": round(time.time() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()
