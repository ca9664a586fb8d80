"""Exploration: what AdamW's first update alone does to the planted model, by its size (not a Table 1 run).

AdamW's first step moves every parameter whose gradient is not ~0 by the same amount, whatever its gradient:
``w -= lr * g / (|g| + eps)`` (bias-corrected moments at step 1; weight decay, ``lr * 0.1 * w``, left out). The
construction reads reserved residual columns through query/key entries of ALPHA = 4096, so a small write into those
columns moves attention logits by ~ALPHA^2 times as much. For step sizes 1e-9 .. 1e-4, on the gradient of one
batch of the planted suite's training stream (16 rows, seed 0, as the learning curve's first step): the validation
scores (new skill, Fig. 8 retention, new-skill loss; their items) and the largest forbidden attention per role; and,
at 1e-5 (the sweep's lowest rate), the same step applied to one parameter tensor at a time (the validation loss).

    python results/planted/exploration/first_step.py <out.json>
"""

import json
import sys

import torch

from arithmech.core.models import load_model
from arithmech.embedded import planted as PM
from arithmech.embedded import planted_truth as T
from arithmech.evals.suites import get_suite
from arithmech.finetune.data import Collator, tokenize_pairs
from arithmech.finetune.loss import completion_loss
from arithmech.table1.plan import val_math

torch.set_num_threads(1)
torch.manual_seed(0)
S = get_suite("planted")
net, tok, _ = load_model("planted", attn_implementation="eager")
net.float().requires_grad_(True)
batch = Collator(tok.pad_token_id)(tokenize_pairs(tok, S.train(16, 0, 0)))
completion_loss(net, batch).backward()
params = {n: p for n, p in net.named_parameters() if p.grad is not None}
update = {n: p.grad / (p.grad.abs() + 1e-8) for n, p in params.items()}
base = {n: p.detach().clone() for n, p in params.items()}
prompts = [it["prompt"] for it in PM.split_items("in_distribution_small", 3, 10)] + [x for _, x in T.slot_pairs(3)]


def scores() -> dict:
    net.eval()
    with torch.no_grad():
        val = S.evaluate(net, tok, "val", {}, 0)
        forbidden = T.forbidden_attention(net, tok, prompts)
    return {
        "val_math": val_math(val, S),
        "val_math_items": val[S.primary_math]["items"],
        "val_fig8": val["fig8"]["value"],
        "val_fig8_items": val["fig8"]["items"],
        "val_nll": val["math_nll"]["value"],
        "forbidden_attention_max": forbidden,
    }


def step(size: float, names) -> None:
    with torch.no_grad():
        for n, p in params.items():
            p.copy_(base[n] - size * update[n] if n in names else base[n])


out = {"batch_rows": 16, "step_sizes": {}, "per_tensor_at": 1e-5, "per_tensor_val_nll": {}}
for size in (0.0, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4):
    step(size, params)
    out["step_sizes"][f"{size:g}"] = scores()
    print(size, {k: v for k, v in out["step_sizes"][f"{size:g}"].items() if "items" not in k}, flush=True)
for n in params:
    step(1e-5, {n})
    net.eval()
    with torch.no_grad():
        out["per_tensor_val_nll"][n] = S.evaluate(net, tok, "val", {}, 0)["math_nll"]["value"]
step(0.0, params)
json.dump(out, open(sys.argv[1], "w"), indent=1)
