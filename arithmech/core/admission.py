"""Whether this machine has what a run needs: the free memory (:func:`available_bytes`) against the step's
estimate (:func:`arithmech.core.estimate.estimate`), checked before any model loads (:func:`check`).

:mod:`arithmech.core.estimate` says what a run needs from its config alone; this module reads the machine.
"""

from __future__ import annotations

import os

from arithmech.core.estimate import BASELINE, MEMORY_ENV, Estimate, GiB, estimate


def available_bytes(device: str = "cpu") -> int | None:
    """Memory this machine has free for the run: ``$ARITHMECH_MEMORY_BYTES`` when set, else on the CPU
    ``MemAvailable`` (psutil) plus what this process holds already (its baseline is in the estimate), on a GPU
    the device's free memory plus the host terms counted there (``None`` where it cannot be read)."""
    if os.environ.get(MEMORY_ENV):
        return int(os.environ[MEMORY_ENV])
    if device == "cpu":
        try:
            import psutil  # lazy: only for the check

            return int(psutil.virtual_memory().available + psutil.Process().memory_info().rss)
        except Exception:  # noqa: BLE001 (no psutil, no /proc: no check)
            return None
    try:
        import torch  # lazy: check_device imported it already for a GPU

        return int(torch.cuda.mem_get_info(torch.device(device))[0]) + BASELINE
    except Exception:  # noqa: BLE001
        return None


def check(config, **known) -> Estimate | None:
    """:func:`estimate` ``config``; raise one :class:`ValueError` line naming the flag to lower when the peak
    exceeds :func:`available_bytes`. Runs before any model loads (the command line calls it before torch)."""
    e = estimate(config, **known)
    have = available_bytes(getattr(config, "device", "cpu")) if e else None
    if e is not None and have is not None and e.peak_bytes > have:
        biggest = max(e.phases[e.peak_phase].items(), key=lambda kv: kv[1])[0]
        raise ValueError(
            f"{e.step} needs about {e.peak_bytes / GiB:.1f} GiB at its peak ({e.peak_phase}: {biggest} "
            f"{e.phases[e.peak_phase][biggest] / GiB:.1f} GiB; weights {e.fixed['weights'] / GiB:.2f} GiB) "
            f"but this machine has {have / GiB:.1f} GiB free; lower {e.flag} "
            "(arithmech.core.estimate; the memory model in book/contracts.md)"
        )
    return e
