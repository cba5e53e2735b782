"""Hugging Face's own code, run in float64 throughout: its casts to float32 are skipped.

Hugging Face computes RMSNorm, the rotary angles, the RoPE frequencies (``modeling_rope_utils``) and the MoE
routers in float32 whatever the model's dtype, so its float64 outputs are only float32-accurate. Inside
:class:`KeepFloat64`, every ``.float()`` of a float64 tensor, ``.to(torch.float32)`` and ``dtype=torch.float32``
keeps float64 instead: the same code, unchanged, in float64 (build the model inside it too, so that its RoPE
frequencies are computed in float64).
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode


class KeepFloat64(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.float and args[0].dtype == torch.float64:
            return args[0]
        if kwargs.get("dtype") == torch.float32:
            kwargs["dtype"] = torch.float64
        if func in (torch.Tensor.to, torch.Tensor.type):
            args = tuple(torch.float64 if a is torch.float32 else a for a in args)
        return func(*args, **kwargs)


def randomize(model, seed: int, scale: float = 0.3):
    """Every parameter drawn from N(0, scale^2) (unit norm gains would hide a swapped gain); float64, eval mode."""
    model = model.to(torch.float64).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale)
    return model
