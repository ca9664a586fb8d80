"""Whether the planted construction still holds after each of Table 1's planted runs (the `planted-table1` design:
"every tuned run's forbidden attention and non-planted output change are measured beside its scores").

Table 1's runs keep their scores, not their weights, so each run is trained again from its record (the same arm's
heads, rate, seed, steps and data seed: `arithmech.table1.train.train_arm`, the runner's own call) and its test
scores are compared with the record's, item by item (`reproduced`), before the construction is measured on it
(`arithmech.embedded.planted_truth`, as the shipped weights' test measures it): the largest deviation of the fixed
entries, the largest attention of a blind / off / composer head on a token its entries forbid, and the largest change
of a non-planted head's output when only the operands and the operator change. A run's construction *holds* when the
forbidden attention is at most 1e-12 for every role and the non-planted output change at most 1e-5 (the design's
bounds). Run from the repository root: `python results/planted/construction/construction.py <out.json>`.
"""

import json
import sys
from pathlib import Path

import torch

from arithmech.embedded import planted as planted_model
from arithmech.embedded import planted_truth as truth
from arithmech.evals.suites import get_suite
from arithmech.steps.config_training import Table1 as Config
from arithmech.table1.train import train_arm

FOLDER = Path("results/planted/finetune")
ATTENTION_BOUND, OUTPUT_BOUND = 1e-12, 1e-5

torch.set_num_threads(1)
suite = get_suite("planted")
config = Config(model_name="planted", suite="planted", batch_size=16)
small = planted_model.split_items("in_distribution_small", 3, 10)
pairs = truth.slot_pairs(3)
prompts = [it["prompt"] for it in small] + [x for _, x in pairs]
out = {"bounds": {"forbidden_attention": ATTENTION_BOUND, "nonplanted_output_change": OUTPUT_BOUND}, "runs": {}}
for path in sorted(FOLDER.glob("*.json")):
    rec = json.loads(path.read_text())
    if rec.get("mode") not in ("full", "precise"):
        continue
    p = rec["parameters"]
    heads = None if rec["heads"] == "all" else [tuple(h) for h in rec["heads"]]
    net, tok, _ = train_arm(config, suite, heads, p["lr"], int(rec["seed"]), p["steps"], p["data_seed"])
    test = suite.evaluate(net, tok, "test", p["sizes"], p["data_seed"])
    reproduced = all(test[k]["items"] == rec["results"][k]["items"] for k in rec["results"])
    net.float().set_attn_implementation("eager")
    forbidden = truth.forbidden_attention(net, tok, prompts)
    change = max(v for k, v in truth.slot_invariance(net, tok, pairs).items() if k not in planted_model.PLANTED)
    out["runs"][path.stem] = {
        "arm": p["arm"], "lr": p["lr"], "seed": int(rec["seed"]), "draw": p["draw"], "reproduced": reproduced,
        "fixed_entries_max_deviation": truth.fixed_deviation(net, tok),
        "forbidden_attention_max": forbidden, "nonplanted_output_change_max": change,
        "holds": max(forbidden.values()) <= ATTENTION_BOUND and change <= OUTPUT_BOUND,
    }
    print(path.stem, json.dumps(out["runs"][path.stem]), flush=True)
Path(sys.argv[1] if len(sys.argv) > 1 else "construction.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
