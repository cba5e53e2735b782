"""TransformerLens's two float32 steps in float64, for comparisons to 1e-10 (tests/test_bridge.py, test_interp.py).

Whatever the model's dtype, TransformerLens's own model (``boot_native``) computes its RMSNorm in float32
(``NativeRMSNorm`` casts its input to float32 and back) and its RoPE tables from float32 angles (``NativeRotary``):
a float64 model with RMSNorm or RoPE is only float32-accurate (``transformer.bridge.to_transformer_lens`` says so).
:func:`in_float64` gives those two steps the same formulas in float64, as ``tests/test_hf_llama.py`` does for Hugging
Face's Llama; every other step of TransformerLens is left as it is.
"""

from __future__ import annotations

import types

import torch


def in_float64(bridge):
    """``bridge``, its RMSNorms and RoPE tables computed in float64 (the same formulas as TransformerLens's)."""
    from transformer_lens.model_bridge.sources.native.model import NativeRMSNorm, NativeRotary

    def rms_norm(self, x):  # NativeRMSNorm.forward without its cast to float32
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps))

    for module in bridge.original_model.modules():
        if isinstance(module, NativeRMSNorm):
            module.forward = types.MethodType(rms_norm, module)
        elif isinstance(module, NativeRotary):  # NativeRotary.__init__ in float64: adjacent pairs share an angle
            d = module.rotary_dim
            inv_freq = module.effective_base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d / 2,)
            angles = torch.arange(module.cos_cached.shape[0], dtype=torch.float64)[:, None] * inv_freq  # (n_ctx, d/2)
            module.cos_cached = angles.cos().repeat_interleave(2, dim=-1)  # (n_ctx, d)
            module.sin_cached = angles.sin().repeat_interleave(2, dim=-1)  # (n_ctx, d)
    return bridge
