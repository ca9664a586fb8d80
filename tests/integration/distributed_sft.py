"""One SFT run on a tiny GQA Llama, single process or one rank of ``accelerate launch`` / ``torchrun``;
rank 0 writes the per-step losses and the untouched-weights check as JSON (read by test_distributed.py).

    python tests/integration/distributed_sft.py MODE OUT.json                       # one process
    accelerate launch --cpu --num_processes 2 tests/integration/distributed_sft.py MODE OUT.json
    MODE: full | full-fsdp | precise (head slices, cached prefix) | precise-plain

Same rows, model seed and effective batch (8) everywhere: :func:`arithmech.finetune.runner.training_args`
sets gradient accumulation to ``8 / (4 x world size)``, so one process sees in two micro-batches what
two processes see in one each.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # tests/ (factories)
from factories import make_tiny_llama, random_sft_rows  # noqa: E402

from arithmech.finetune import adapter  # noqa: E402
from arithmech.finetune.runner import make_trainer, training_args  # noqa: E402

SPEC = adapter.HeadSpec(heads=((1, 0), (1, 3), (2, 2)))                 # 3 layers, 4 query heads on 2 kv heads


class _Tok:
    pad_token_id = 0




def changed_outside_slices(merged: dict, orig: dict, spec: adapter.HeadSpec, head_dim: int) -> int:
    """Entries outside ``spec``'s slices whose bytes differ from the loaded model."""
    bad = 0
    for k, v in merged.items():
        m = torch.zeros_like(v, dtype=torch.bool)
        for l, hs in spec.by_layer().items():
            for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                if k == f"model.layers.{l}.self_attn.{name}.weight":
                    heads = {h // 2 for h in hs} if name in ("k_proj", "v_proj") else hs   # group 2, kv_policy any
                    for h in heads:
                        sl = slice(h * head_dim, (h + 1) * head_dim)
                        if name == "o_proj":
                            m[:, sl] = True
                        else:
                            m[sl] = True
        bad += int((v[~m] != orig[k][~m]).sum())
    return bad


def main(mode: str, out: str) -> None:
    torch.set_num_threads(1)
    model = make_tiny_llama("sdpa")
    orig = {k: v.clone() for k, v in model.state_dict().items()}
    fsdp = "LlamaDecoderLayer" if mode == "full-fsdp" else None
    with tempfile.TemporaryDirectory() as tmp:
        args = training_args(tmp, lr=1e-2, batch_size=8, micro_batch_size=4, epochs=2, warmup=0.0,
                             weight_decay=0.1, logging_steps=1, fsdp_layer=fsdp)
        model.train()
        precise = mode.startswith("precise")
        trainer = make_trainer(model, "precise" if precise else "full", args, random_sft_rows(), _Tok(),
                               SPEC if precise else None, cache_prefix=(mode == "precise") if precise else None)
        trainer.train()
        state = trainer.state
        result = {"mode": mode, "world_size": int(os.environ.get("WORLD_SIZE", 1)),
                  "fsdp": bool(trainer.args.fsdp), "losses": [h["loss"] for h in state.log_history if "loss" in h],
                  "distributed_type": str(trainer.accelerator.distributed_type),
                  "wrapper": type(trainer.model_wrapped).__name__,
                  "sharded_parameters": sum(type(p).__name__ == "DTensor" for p in trainer.model.parameters())}
        if precise:
            result["cached_prefix"] = trainer.prefix is not None
            merged = adapter.merge(model).state_dict()
            result["changed_outside_slices"] = changed_outside_slices(merged, orig, SPEC, model.config.head_dim)
            result["weights_checksum"] = float(sum(v.double().sum() for k, v in merged.items()))
    if trainer.args.process_index == 0:
        Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:3])
