"""arithmech: interpreting and improving LLMs in arithmetic calculation (Zhang et al., ICML 2024).

identify (path patching, knockout) → analyze (attention by role, MLP projections) →
fine-tune (precise SFT of key heads), on any Llama-family model, by default on the
embedded arithmetic model shipped with the package.
"""
from arithmech.core.models import Geometry, load_model
from arithmech.core.trace import Trace, TraceDict

__all__ = ["load_model", "Geometry", "Trace", "TraceDict"]
__version__ = "0.1.0"
