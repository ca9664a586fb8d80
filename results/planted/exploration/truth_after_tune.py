"""Exploration: does the planted construction survive Table 1's fine-tunes? (not a Table 1 run)"""
import json, sys, time
import torch
from arithmech.embedded import planted as PM
from arithmech.embedded import planted_truth as T
from arithmech.evals.suites import get_suite
from arithmech.steps.config_training import Table1 as Config
from arithmech.table1.train import train_arm

torch.set_num_threads(1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 320
S = get_suite("planted")
c = Config(model_name="planted", suite="planted", batch_size=16)
small = PM.split_items("in_distribution_small", 3, 10)
pairs = T.slot_pairs(3)
prompts = [it["prompt"] for it in small] + [x for _, x in pairs]
out = {}
for name, heads, lr in [("base", None, None), ("full", None, 3e-3), ("precise-key", [(2, 0), (2, 1), (2, 2)], 1e-2),
                        ("precise-random (blind 1.0, 1.1, 2.3)", [(1, 0), (1, 1), (2, 3)], 1e-2),
                        ("precise-random-any (off 3.0, 3.1, blind 0.1)", [(3, 0), (3, 1), (0, 1)], 1e-2)]:
    t0 = time.time()
    if lr is None:
        from arithmech.core.models import load_model
        net, tok, _ = load_model("planted", attn_implementation="sdpa")
    else:
        net, tok, _ = train_arm(c, S, heads, lr, 0, steps, 0)
    net.float().set_attn_implementation("eager")
    inv = T.slot_invariance(net, tok, pairs)
    out[name] = {
        "lr": lr, "steps": steps if lr else 0,
        "fixed_entries_max_deviation": T.fixed_deviation(net, tok),
        "forbidden_attention_max": T.forbidden_attention(net, tok, prompts),
        "nonplanted_output_change_max": max(v for k, v in inv.items() if k not in PM.PLANTED),
        "movers_ablated_small": T.mean_ablation(net, tok, small, PM.MOVERS),
        "seconds": round(time.time() - t0, 1),
    }
    print(name, json.dumps(out[name]), flush=True)
json.dump(out, open(sys.argv[2] if len(sys.argv) > 2 else "truth_after_tune.json", "w"), indent=1)
