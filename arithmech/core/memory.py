"""Peak memory of a pipeline step, per phase: the process's resident set and the CUDA allocator.

>>> mem = PeakMemory(model)            # resets the CUDA peak counters of the model's GPUs
>>> ...; mem.mark("patching")          # after each phase
>>> mem.summary()
{'peak_rss_bytes': 1310720000, 'peak_rss_by_phase': {'patching': 1310720000},
 'cuda_peak_bytes': None, 'cuda_peak_by_phase': None}

* ``peak_rss_bytes`` is the process's high-water mark of resident memory (Linux's ``VmHWM``, else
  ``getrusage``'s ``ru_maxrss``): it never goes down, so it covers everything the process did before too (model
  loading included), and ``peak_rss_by_phase[p]`` is that mark at the end of phase ``p``: the first
  phase whose value jumps is the one that set the peak. ``None`` where the platform has no
  ``resource`` module (Windows).
* ``cuda_peak_bytes`` is ``torch.cuda.max_memory_allocated`` over the phases (the counters are
  reset at the start and after every mark, so ``cuda_peak_by_phase[p]`` is phase ``p``'s own peak),
  taken on the GPU of the model's parameters that peaked highest; ``None`` when the model is not on
  a GPU. It counts tensors only, not the CUDA context or the allocator's cached blocks.
"""

from __future__ import annotations

import os
import sys
import threading

import torch


def rss_now() -> int | None:
    """This process's resident set right now, in bytes, from ``/proc/self/statm`` (``None`` elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


def peak_rss_bytes() -> int | None:
    """The process's peak resident set so far, in bytes: ``VmHWM`` of ``/proc/self/status`` on Linux (this
    program's own peak: ``getrusage``'s ``ru_maxrss`` keeps the peak of the process that forked it, across
    ``exec``, so a small step started by a large one would report the large one's memory), else ``ru_maxrss``
    (macOS: bytes, BSD: KiB); ``None`` with neither."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    try:
        import resource  # lazy: POSIX only
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # macOS: bytes; Linux: KiB


class PeakMemory:
    """Record peak memory at the end of each phase of a run on ``model``."""

    def __init__(self, model: torch.nn.Module):
        self.gpus = sorted({p.device for p in model.parameters() if p.device.type == "cuda"}, key=str)
        self.rss: dict[str, int | None] = {}
        self.cuda: dict[str, int] = {}
        self._reset()

    def _reset(self) -> None:
        for d in self.gpus:
            torch.cuda.reset_peak_memory_stats(d)

    def mark(self, phase: str) -> None:
        """Close ``phase``: store the RSS high-water mark and the phase's CUDA peak."""
        self.rss[phase] = peak_rss_bytes()
        if self.gpus:
            self.cuda[phase] = max(torch.cuda.max_memory_allocated(d) for d in self.gpus)
            self._reset()

    def summary(self) -> dict:
        """``peak_rss_bytes``, ``peak_rss_by_phase``, ``cuda_peak_bytes``, ``cuda_peak_by_phase``."""
        rss = [v for v in self.rss.values() if v is not None]
        return {
            "peak_rss_bytes": max(rss) if rss else peak_rss_bytes(),
            "peak_rss_by_phase": dict(self.rss),
            "cuda_peak_bytes": max(self.cuda.values()) if self.cuda else None,
            "cuda_peak_by_phase": dict(self.cuda) if self.gpus else None,
        }


class BlockPeakMemory:
    """Peak memory of a ``with`` block, above what was in use at entry (a training run's own cost; unlike
    :class:`PeakMemory`, which records the process's high-water mark per phase). CUDA:
    ``torch.cuda.max_memory_allocated`` minus the allocation at entry. CPU: resident set size sampled every 5 ms from
    ``/proc/self/statm`` (torch's CPU allocator is invisible to tracemalloc), minus the RSS at entry; elsewhere the
    ``ru_maxrss`` increase."""

    def __init__(self, device: str = "cpu"):
        self.device = torch.device(device)
        self.result: dict = {}

    _rss = staticmethod(rss_now)

    def __enter__(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.base = torch.cuda.memory_allocated(self.device)
        else:
            self.base, self.peak, self._stop = self._rss(), 0, threading.Event()
            self.base_maxrss = peak_rss_bytes()
            if self.base is not None:
                self.peak = self.base
                self._thread = threading.Thread(target=self._sample, daemon=True)
                self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._rss() or 0)

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            peak = torch.cuda.max_memory_allocated(self.device)
            self.result = {
                "peak_bytes": peak - self.base,
                "peak_total_bytes": peak,
                "method": "torch.cuda.max_memory_allocated",
            }
        elif self.base is not None:
            self._stop.set()
            self._thread.join()
            self.peak = max(self.peak, self._rss() or 0)
            self.result = {
                "peak_bytes": self.peak - self.base,
                "peak_total_bytes": self.peak,
                "method": "RSS sampled every 5 ms (/proc/self/statm)",
            }
        else:
            peak = peak_rss_bytes()
            self.result = {
                "peak_bytes": peak - self.base_maxrss,
                "peak_total_bytes": peak,
                "method": "ru_maxrss increase",
            }
        return False
