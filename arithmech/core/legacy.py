"""Records of earlier formats, converted once into today's (nothing recomputed)."""
from __future__ import annotations

from arithmech.core.results import SCHEMA_VERSION, finetune_record, measure


def upgrade_finetune(old: dict) -> dict:
    """Convert a record of the two earlier formats into this one (values kept, nothing recomputed):
    the Table 1 runner's (``results`` with value/ci/n/items, ``delta`` with delta/ci, ``train``) and
    the single-arm runner's (``before`` / ``after`` accuracies, ``delta`` floats)."""
    if old.get("schema_version") == SCHEMA_VERSION:
        return old
    if "after" in old:                                       # the single-arm runner
        res = {k: measure(v) for k, v in old["after"].items()}
        base = {k: measure(v) for k, v in old["before"].items()}
        delta = {k: {"delta": float(v), "ci": None} for k, v in old.get("delta", {}).items()}
        return finetune_record(model=old["model"], mode=old["mode"], tag=old.get("tag"), command=old.get("command"),
                               seed=old.get("parameters", {}).get("seed"), device=old.get("parameters", {}).get("device"),
                               dtype=old.get("parameters", {}).get("dtype"), heads=old.get("heads"), mlps=old.get("mlps"),
                               tuned_parameters=old.get("tuned_parameters"), total_parameters=old.get("total_parameters"),
                               parameters=old.get("parameters"), train=old.get("train"), results=res, base=base,
                               delta=delta, versions=old.get("versions"), wall_s=old.get("wall_s"))
    tr = old.get("train") or {}
    mode = old["mode"]
    return finetune_record(model=old["model"], mode=mode, tag=None, command=old.get("command"), seed=old.get("seed"),
                           device=old.get("device"), dtype=old.get("dtype"),
                           heads=tr.get("heads") if mode != "base" else None, mlps=[] if mode == "precise" else
                           ("all" if mode == "full" else None), tuned_parameters=tr.get("tuned_parameters", 0 if mode == "base" else None),
                           total_parameters=tr.get("total_parameters"), parameters={"sizes": old.get("sizes")},
                           train=tr or None, results=old["results"], base=None, delta=old.get("delta"),
                           data=old.get("data"), versions=old.get("versions"), wall_s=old.get("wall_s"))
