"""A model's sizes (:class:`Geometry`), a plain dataclass without torch: the paper's LLaMA2-7B row
(:mod:`arithmech.paper`) and every loaded model (:func:`arithmech.core.models.load_model`) use it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Geometry:
    """Sizes read from the model config.

    ``group = n_heads // n_kv_heads``: query head ``h`` reads key/value head ``h // group``.
    """

    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    vocab_size: int

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads

    def kv_head(self, head: int) -> int:
        """The key/value head that query head ``head`` reads (the one GQA map of the package)."""
        return head // self.group

    @classmethod
    def from_config(cls, cfg) -> Geometry:
        n_heads = cfg.num_attention_heads
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
        return cls(
            n_layers=cfg.num_hidden_layers,
            n_heads=n_heads,
            n_kv_heads=getattr(cfg, "num_key_value_heads", None) or n_heads,
            head_dim=head_dim,
            d_model=cfg.hidden_size,
            vocab_size=cfg.vocab_size,
        )
