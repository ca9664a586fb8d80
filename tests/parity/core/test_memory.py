"""Parity tests of ``arithmech/core/memory.py``."""
from __future__ import annotations

import os

import pytest
import torch


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_peak_memory_sees_a_short_lived_allocation():
    """Protects identify's ``memory`` field: a tensor allocated and freed inside a phase raises that
    phase's peak RSS by at least its size above the resident set before it (measured from /proc)."""
    from arithmech.core.memory import PeakMemory, peak_rss_bytes
    mem = PeakMemory(torch.nn.Linear(2, 2))
    mem.mark("before")
    rss = int(open("/proc/self/statm").read().split()[1]) * __import__("os").sysconf("SC_PAGE_SIZE")
    size = max(0, mem.rss["before"] - rss) + (96 << 20)                # above the old high-water mark
    t = torch.ones(size // 4)                                          # touched: resident
    del t
    mem.mark("alloc")
    assert mem.rss["alloc"] >= rss + size - (8 << 20) and peak_rss_bytes() >= mem.rss["alloc"]
    out = mem.summary()
    assert out["peak_rss_bytes"] == mem.rss["alloc"] and out["cuda_peak_bytes"] is None


def test_a_child_process_reports_its_own_peak_not_its_parents():
    """Protects per-process peaks: Linux's ``ru_maxrss`` survives fork + exec, so a step started by a large
    process (a notebook kernel, pytest) would report its parent's peak. peak_rss_bytes reads VmHWM, the
    child's own: here the parent touches 1 GiB first and the child's peak stays far below the parent's."""
    import subprocess
    import sys

    from arithmech.core.memory import peak_rss_bytes
    if not os.path.exists("/proc/self/status"):
        pytest.skip("VmHWM is Linux's")
    block = bytearray(1 << 30)
    block[:: 4096] = b"x" * len(block[:: 4096])        # touch every page: resident, not only reserved
    parent = peak_rss_bytes()
    child = int(subprocess.run([sys.executable, "-c", "from arithmech.core.memory import peak_rss_bytes; "
                                "print(peak_rss_bytes())"], capture_output=True, text=True, check=True).stdout)
    del block
    assert parent >= 1 << 30 and child < parent - (512 << 20), (parent, child)
