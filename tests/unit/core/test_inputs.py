"""The input contract's shared checks (arithmech.core.inputs): one device check, one dtype table."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from arithmech.core import inputs
from arithmech.core.models import torch_dtype


def test_check_device_accepts_cuda_n_below_the_device_count(monkeypatch):
    """Protects --device: cpu always, cuda and cuda:N only where torch sees CUDA and N is below its device
    count, anything else refused with one line naming the allowed values (the fine-tune step's rules)."""
    assert inputs.check_device("cpu") == "cpu"
    for bad in ("gpu", "cuda:", "cuda:x", "cuda:-1", "cpu:0", "", "CUDA"):
        with pytest.raises(ValueError, match="cuda:N"):
            inputs.check_device(bad)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for dev in ("cuda", "cuda:0"):
        with pytest.raises(ValueError, match="no CUDA device"):
            inputs.check_device(dev)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert [inputs.check_device(d) for d in ("cuda", "cuda:0", "cuda:1")] == ["cuda", "cuda:0", "cuda:1"]
    with pytest.raises(ValueError, match="2 CUDA device"):
        inputs.check_device("cuda:2")


def test_one_dtype_table_for_the_choices_and_the_loader():
    """Protects the single dtype table: the --dtype choices are its canonical names, every name and alias
    loads as the torch dtype it names, a torch dtype passes through, and an unknown name is refused."""
    assert inputs.DTYPES == ("float32", "bfloat16", "float16")
    assert set(inputs.DTYPE_NAMES.values()) == set(inputs.DTYPES)
    want = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
            "float16": torch.float16, "fp16": torch.float16}
    assert {n: torch_dtype(n) for n in inputs.DTYPE_NAMES} == want
    assert torch_dtype(torch.float16) is torch.float16
    with pytest.raises(ValueError, match="float32, bfloat16, float16"):
        torch_dtype("float64")


def test_the_input_checks_load_without_torch():
    """Protects the CLI's cheap refusals: importing arithmech.core.inputs (the device and dtype tables,
    check_device for cpu) does not import torch."""
    code = ("import sys; from arithmech.core import inputs; inputs.check_device('cpu'); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
