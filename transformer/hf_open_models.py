"""Hugging Face's Mistral, Mixtral, Qwen3-MoE and DeepSeek-V3 as configurations of ours (chapter 14).

Each is Llama's configuration (:func:`transformer.hf.llama_config`) with a few more fields, read from Hugging
Face's ``transformers/models/<name>/modeling_<name>.py``:

=========================  ==========================================================================================
Hugging Face               ours, added to Llama's configuration
=========================  ==========================================================================================
``MistralForCausalLM``     ``sliding_window=config.sliding_window`` in every layer
                           (``create_sliding_window_causal_mask``: query ``t`` sees ``t - W + 1 .. t``)
``MixtralForCausalLM``     the same window, and ``moe``: ``num_local_experts``, ``num_experts_per_tok``, softmax
                           before the top-k, kept weights renormalised (``MixtralTopKRouter``), every layer sparse
``Qwen3MoeForCausalLM``    ``qk_norm=True`` (``q_norm``, ``k_norm``: an RMSNorm over each head's ``head_dim``, before
                           RoPE), ``moe`` with ``moe_intermediate_size``, ``renormalize=norm_topk_prob``, sparse
                           layers where ``layer not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0``
                           (the others: a SwiGLU of ``intermediate_size``)
``DeepseekV3ForCausalLM``  ``latent``: latent attention (:mod:`transformer.latent_attention`) with ``q_lora_rank``,
                           ``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``, RoPE pairs
                           interleaved if ``rope_interleave``; ``moe``: sigmoid scores, ``e_score_correction_bias``
                           for choosing only, ``n_group``/``topk_group``, ``norm_topk_prob``,
                           ``routed_scaling_factor``, ``n_shared_experts``; the first ``first_k_dense_replace`` layers
                           dense (``DeepseekV3DecoderLayer``, ``DeepseekV3TopkRouter``, ``DeepseekV3MoE``)
=========================  ==========================================================================================

The experts are stored by Hugging Face as 3-D tensors: ``gate_up_proj (n_experts, 2 d_expert, d_model)``, the gate
(our ``W_1``) then the up projection (``W_3``), and ``down_proj (n_experts, d_model, d_expert)`` (``W_2``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import replace

from .config import TransformerConfig
from .interop import copy_linear, copy_tensor
from .latent_attention import LatentAttention, LatentConfig
from .model import DecoderOnly
from .moe import MixtureOfExperts, MoEConfig


def open_model_config(c, llama_config: Callable) -> TransformerConfig:
    """Our configuration of a Mistral, Mixtral, Qwen3-MoE or DeepSeek-V3 config ``c``; ``llama_config``:
    :func:`transformer.hf.llama_config`, which reads its Llama part."""
    kind = type(c).__name__
    if kind == "DeepseekV3Config":
        return _deepseek_config(c, llama_config)
    base = llama_config(c)
    window = getattr(c, "sliding_window", None)
    if kind == "MistralConfig":
        return replace(base, sliding_window=window)
    if kind == "MixtralConfig":
        return replace(base, sliding_window=window, moe=MoEConfig(c.num_local_experts, c.num_experts_per_tok))
    sparse = tuple(i not in c.mlp_only_layers and (i + 1) % c.decoder_sparse_step == 0
                   for i in range(c.num_hidden_layers))
    moe = MoEConfig(c.num_experts, c.num_experts_per_tok, d_expert=c.moe_intermediate_size,
                    renormalize=bool(c.norm_topk_prob), layers=sparse)
    return replace(base, sliding_window=window, qk_norm=True, moe=moe if c.num_experts else None)


def _deepseek_config(c, llama_config: Callable) -> TransformerConfig:
    """DeepSeek-V3: Llama's fields (its ``head_dim`` is RoPE's part, read below), latent attention and experts."""
    plain = copy.copy(c)
    plain.head_dim = None  # d_model / n_heads: latent attention's sizes are its own
    base = llama_config(plain)
    rope = c.rope_parameters or {}
    scale = (c.qk_nope_head_dim + c.qk_rope_head_dim) ** -0.5
    if rope.get("rope_type", "default") != "default" and rope.get("mscale_all_dim"):  # yarn_apply_mscale
        scale *= (0.1 * rope["mscale_all_dim"] * math.log(rope["factor"]) + 1.0) ** 2
    latent = LatentConfig(c.kv_lora_rank, c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim, c.q_lora_rank, scale)
    moe = MoEConfig(c.n_routed_experts, c.num_experts_per_tok, c.moe_intermediate_size, c.n_shared_experts,
                    "sigmoid", bool(c.norm_topk_prob), c.n_group, c.topk_group, float(c.routed_scaling_factor),
                    tuple(i >= c.first_k_dense_replace for i in range(c.num_hidden_layers)))
    return replace(base, n_kv_heads=None, latent=latent, moe=moe,
                   rope_pairs="interleaved" if c.rope_interleave else "half")


def from_open_model(model, llama_config: Callable) -> DecoderOnly:
    """Our :class:`~transformer.model.DecoderOnly` with ``model``'s configuration and weights (``model``: a
    ``MistralForCausalLM``, ``MixtralForCausalLM``, ``Qwen3MoeForCausalLM`` or ``DeepseekV3ForCausalLM``)."""
    inner = model.model
    ours = DecoderOnly(open_model_config(model.config, llama_config)).to(inner.embed_tokens.weight.dtype)
    copy_tensor(ours.embed.tokens.weight, inner.embed_tokens.weight, "embed_tokens")
    for block, theirs in zip(ours.causal_stack.layers, inner.layers):
        _copy_attention(block.self_attn, theirs.self_attn)
        _copy_feed_forward(block.ff, theirs.mlp)
        copy_tensor(block.norm1.gamma, theirs.input_layernorm.weight, "input_layernorm")
        copy_tensor(block.norm2.gamma, theirs.post_attention_layernorm.weight, "post_attention_layernorm")
    copy_tensor(ours.causal_stack.norm.gamma, inner.norm.weight, "norm")
    if not ours.head.tied:
        copy_tensor(ours.head.weight, model.lm_head.weight, "lm_head.weight")
    return ours


def _copy_attention(mine, attn) -> None:
    """Multi-head attention (with Qwen3's ``q_norm`` and ``k_norm``) or DeepSeek's latent attention."""
    if isinstance(mine, LatentAttention):
        pairs = [(mine.w_dkv, attn.kv_a_proj_with_mqa), (mine.w_ukv, attn.kv_b_proj), (mine.w_o, attn.o_proj)]
        norms = [(mine.kv_norm, attn.kv_a_layernorm)]
        if attn.q_proj is not None:
            pairs.append((mine.w_q, attn.q_proj))
        else:
            pairs += [(mine.w_dq, attn.q_a_proj), (mine.w_uq, attn.q_b_proj)]
            norms.append((mine.q_norm, attn.q_a_layernorm))
    else:
        pairs = [(mine.w_q, attn.q_proj), (mine.w_k, attn.k_proj), (mine.w_v, attn.v_proj), (mine.w_o, attn.o_proj)]
        norms = [] if mine.q_norm is None else [(mine.q_norm, attn.q_norm), (mine.k_norm, attn.k_norm)]
    for ours_linear, their_linear in pairs:
        copy_linear(ours_linear, their_linear)
    for ours_norm, their_norm in norms:
        copy_tensor(ours_norm.gamma, their_norm.weight, "RMSNorm weight")


def _copy_feed_forward(ff, mlp) -> None:
    """A dense SwiGLU (``gate_proj``, ``up_proj``, ``down_proj``) or the experts and their router."""
    if not isinstance(ff, MixtureOfExperts):
        for ours_linear, their_linear in ((ff.linear1, mlp.gate_proj), (ff.linear3, mlp.up_proj),
                                          (ff.linear2, mlp.down_proj)):
            copy_linear(ours_linear, their_linear)
        return
    copy_tensor(ff.router.weight, mlp.gate.weight, "gate.weight")
    if hasattr(mlp.gate, "e_score_correction_bias"):  # DeepSeek-V3
        copy_tensor(ff.router.bias, mlp.gate.e_score_correction_bias, "gate.e_score_correction_bias")
    if ff.shared is not None:
        _copy_feed_forward(ff.shared, mlp.shared_experts)
    for e, expert in enumerate(ff.experts):
        gate, up = mlp.experts.gate_up_proj[e].chunk(2, dim=0)  # (2 d_expert, d_model) -> 2 x (d_expert, d_model)
        copy_tensor(expert.linear1.weight, gate, f"experts.gate_up_proj[{e}] (gate)")
        copy_tensor(expert.linear3.weight, up, f"experts.gate_up_proj[{e}] (up)")
        copy_tensor(expert.linear2.weight, mlp.experts.down_proj[e], f"experts.down_proj[{e}]")
