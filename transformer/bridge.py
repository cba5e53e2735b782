"""Our models as TransformerLens models, to use TransformerLens's own tools on them (chapter 13).

:func:`to_transformer_lens` builds TransformerLens's own model from a configuration
(``TransformerBridge.boot_native``, nothing downloaded) and loads our weights into it as they are:

====================================  ==============================================================
ours                                  TransformerLens
====================================  ==============================================================
``embed.tokens.weight`` ``(V, d)``    ``embed.weight``, times ``sqrt(d_model)`` if ``scale_embeddings``
``embed.positions`` ``(max_len, d)``  ``pos_embed.weight``: the learned or sinusoidal table, zeros for
                                      ``positional="none"``; none with RoPE (``rotary``)
``norm1``, ``norm2``, final norm      ``ln1``, ``ln2``, ``ln_final`` (``LN`` or ``RMS``)
``w_q``, ``w_k``, ``w_v``, ``w_o``    ``attn.q``, ``attn.k``, ``attn.v``, ``attn.o``, the same ``(out, in)`` shapes:
                                      ``k``, ``v`` ``(n_kv_heads d_h, d)`` (zero biases if none)
``ff.linear1``, ``ff.linear2``        ``mlp.in``, ``mlp.out``; gated (SwiGLU): ``linear1, linear3,
                                      linear2`` -> ``mlp.gate``, ``mlp.in``, ``mlp.out``
``head.weight``, ``head.bias``        ``unembed.weight``, ``unembed.bias`` (zero if none)
====================================  ==============================================================

:func:`transformer_lens_name` gives the TransformerLens hook of each activation of :mod:`transformer.interp`.
``transformer_lens`` is an optional dependency (``pip install -e ".[lens]"``), imported only when
:func:`to_transformer_lens` is called.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .interp import stack_of
from .model import DecoderOnly, EncoderOnly

# our activation names (transformer.interp.hook_points) -> TransformerLens's hook names, i = the block
HOOKS = {"resid_pre": "blocks.{i}.hook_resid_pre", "attn.pattern": "blocks.{i}.attn.hook_pattern",
         "attn.z": "blocks.{i}.attn.hook_z", "attn.out": "blocks.{i}.hook_attn_out",
         "ffn.out": "blocks.{i}.hook_mlp_out", "resid_post": "blocks.{i}.hook_resid_post"}
# our activations (transformer.feedforward.ACTIVATIONS) -> TransformerLens's act_fn
LENS_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new", "silu": "silu"}


def to_transformer_lens(model: nn.Module):
    """A TransformerLens ``TransformerBridge`` that computes what ``model`` computes in eval mode, with its weights.

    ``model`` is a pre-norm :class:`~transformer.model.DecoderOnly` (causal attention) or
    :class:`~transformer.model.EncoderOnly` (bidirectional), with LayerNorm or RMSNorm, learned, sinusoidal, RoPE
    or no positions, grouped-query attention, an MLP, SwiGLU or no feed-forward: chapter 12's tiny Llama,
    chapter 13's induction model and tiny language model. ``bridge.run_with_cache(ids)`` with ``ids (batch, seq)``
    then returns the logits ``(batch, seq, vocab_size)`` of ``model(ids)`` and every hook of
    :func:`transformer_lens_name`; the bridge is in eval mode, in the dtype and on the device of ``model``, which is
    left as it was (and so is the random state).

    What TransformerLens's model cannot express is refused with a ``ValueError`` naming the field of ``model.cfg``,
    the value expected and the one given: a post-norm model (its blocks are pre-norm, so the 2017 default, chapter
    11's GPT and BERT are refused), no final norm, a relative position bias, token types, a norm after the
    embeddings, BERT's head transform, biases in a gated feed-forward. An encoder-decoder or a Vision Transformer
    is a ``TypeError``.

    The weights are loaded as they are; TransformerLens's weight processing (``process_weights``: ``fold_ln``,
    ``center_writing_weights``, ...) is left off, since it keeps the logits but changes the activations. Three
    differences remain:

    - RoPE on half-split pairs (``rope_pairs="half"``): TransformerLens rotates adjacent pairs, so the rows of
      ``W^Q`` and ``W^K`` are permuted within each head, feature ``i`` to ``2i`` and ``i + d_h / 2`` to ``2i + 1``.
      Scores and everything after them are the same; ``hook_q`` and ``hook_k`` hold the permuted features.
    - Padding: ours hides the token ``cfg.pad_id`` from attention and numbers every position; TransformerLens
      hides only what an ``attention_mask (batch, seq)`` hides and then numbers the positions past the padding.
      The two agree on ids without that token, or with ``attention_mask=(ids != pad_id)`` and
      ``position_ids=torch.arange(seq)[None]``.
    - TransformerLens computes two steps in float32 whatever the dtype: its RMSNorm (``NativeRMSNorm`` takes the
      mean square and divides in float32, then casts back) and its RoPE tables (``NativeRotary`` computes the
      angles ``position * base ** (-2i / d_h)`` in float32). A float64 model with RMSNorm therefore agrees with
      ours to within 1e-6 of the largest logit, one with RoPE and LayerNorm to within 1e-7; with LayerNorm and
      added positions, to 1e-10 (``tests/test_bridge.py``, which also gives those two steps their float64 form and
      then finds every model equal to 1e-10).
    """
    _check_convertible(model)
    tl = _transformer_lens()
    weight = model.head.weight
    with torch.random.fork_rng(devices=[]):  # building TransformerLens's model draws weights we replace
        bridge = tl.TransformerBridge.boot_native(_lens_config(model, tl), dtype=weight.dtype, device=weight.device)
    state = {name: value.detach().clone().to(weight) for name, value in _state(model).items()}
    bridge.load_state_dict(state, strict=True)  # raises on a missing or unexpected name
    return bridge.eval()


def transformer_lens_name(name: str) -> str:
    """The TransformerLens hook that holds our activation ``name`` (:func:`transformer.interp.hook_points`), of the
    same shape: ``"blocks.1.attn.z"`` -> ``"blocks.1.attn.hook_z"``. ``"embed"`` is ``"blocks.0.hook_resid_pre"``
    (TransformerLens's ``hook_embed`` plus ``hook_pos_embed``), ``"final"`` is ``"ln_final.hook_out"``."""
    if name == "embed":
        return "blocks.0.hook_resid_pre"
    if name == "final":
        return "ln_final.hook_out"
    first, i, rest = (name.split(".", 2) + ["", ""])[:3]
    if first != "blocks" or not i.isdigit() or rest not in HOOKS:
        raise ValueError(f"name: expected an activation name of transformer.interp (embed, blocks.i.resid_pre, "
                         f"blocks.i.attn.z, ..., final), got {name!r}")
    return HOOKS[rest].format(i=i)


def _transformer_lens():
    """The optional dependency, imported when :func:`to_transformer_lens` is called."""
    try:
        import transformer_lens
    except ImportError as err:
        raise ImportError("to_transformer_lens needs the optional dependency `transformer_lens`: "
                          "pip install -e \".[lens]\"") from err
    return transformer_lens


def _lens_config(model, tl):
    """TransformerLens's ``TransformerBridgeConfig`` of ``model``'s sizes and choices."""
    cfg = model.cfg
    return tl.TransformerBridgeConfig(
        n_layers=cfg.n_layers, d_model=cfg.d_model, n_ctx=cfg.max_len, d_head=cfg.d_h, n_heads=cfg.n_heads,
        n_key_value_heads=cfg.kv_heads if cfg.kv_heads != cfg.n_heads else None, d_vocab=cfg.vocab_size,
        d_mlp=cfg.d_ff, act_fn=LENS_ACTIVATIONS[cfg.activation], attn_only=cfg.ffn == "none",
        gated_mlp=cfg.ffn == "gated", eps=cfg.norm_eps, normalization_type="RMS" if cfg.norm == "rms" else "LN",
        positional_embedding_type="rotary" if cfg.positional == "rope" else "standard", rotary_dim=cfg.d_h,
        rotary_base=cfg.rope_base, architecture=None, dtype=model.head.weight.dtype, init_weights=False,
        attention_dir="causal" if isinstance(model, DecoderOnly) else "bidirectional")


def _state(model) -> dict[str, torch.Tensor]:
    """TransformerLens's state dict, by its names, from ``model``'s weights (see the table above)."""
    cfg, stack, tokens = model.cfg, stack_of(model), model.embed.tokens
    state = {"embed.weight": tokens.weight * (math.sqrt(cfg.d_model) if tokens.scale else 1.0)}
    if cfg.positional == "learned":
        state["pos_embed.weight"] = model.embed.positions.weight  # (max_len, d_model)
    elif cfg.positional == "sinusoidal":
        state["pos_embed.weight"] = model.embed.positions.table  # (max_len, d_model), fixed
    elif cfg.positional == "none":
        state["pos_embed.weight"] = torch.zeros(cfg.max_len, cfg.d_model)  # NoPE: nothing is added
    for i, block in enumerate(stack.layers):
        state |= _norm(f"blocks.{i}.ln1", block.norm1)
        state |= _attention(f"blocks.{i}.attn", block.self_attn, cfg)
        if block.ff is not None:
            state |= _norm(f"blocks.{i}.ln2", block.norm2)
            gated = cfg.ffn == "gated"  # SwiGLU: W_1 is the gate, W_3 the linear branch; TransformerLens's "in"
            names = (("linear1", "gate"), ("linear3", "in"), ("linear2", "out")) if gated else \
                (("linear1", "in"), ("linear2", "out"))
            for ours, theirs in names:
                state |= _linear(f"blocks.{i}.mlp.{theirs}", getattr(block.ff, ours), bias=not gated)
    state |= _norm("ln_final", stack.norm)
    bias = model.head.bias
    state |= {"unembed.weight": model.head.weight,
              "unembed.bias": torch.zeros(cfg.vocab_size) if bias is None else bias}
    return state


def _attention(prefix: str, attn, cfg) -> dict[str, torch.Tensor]:
    """``W^Q, W^K, W^V, W^O`` and their biases; with RoPE on half-split pairs, ``W^Q`` and ``W^K`` permuted."""
    state = {}
    for ours, theirs in (("w_q", "q"), ("w_k", "k"), ("w_v", "v"), ("w_o", "o")):
        state |= _linear(f"{prefix}.{theirs}", getattr(attn, ours))
    if cfg.positional == "rope" and cfg.rope_pairs == "half":
        d_h = cfg.d_h
        order = torch.arange(d_h).view(2, d_h // 2).T.reshape(d_h)  # (d_h,): 0, d_h/2, 1, d_h/2 + 1, ...
        for key in (f"{prefix}.{theirs}.{kind}" for theirs in ("q", "k") for kind in ("weight", "bias")):
            w = state[key]  # (heads d_h, d_model) or (heads d_h,)
            state[key] = w.view(-1, d_h, *w.shape[1:])[:, order].reshape(w.shape)  # per head (d_h, ...), permuted
    return state


def _linear(prefix: str, linear: nn.Linear, bias: bool = True) -> dict[str, torch.Tensor]:
    """A linear layer's weight ``(out, in)``, and its bias ``(out,)`` (zeros if it has none) if ``bias``."""
    state = {f"{prefix}.weight": linear.weight}
    if bias:
        state[f"{prefix}.bias"] = torch.zeros(linear.out_features) if linear.bias is None else linear.bias
    return state


def _norm(prefix: str, norm: nn.Module) -> dict[str, torch.Tensor]:
    """A LayerNorm's ``gamma`` and ``beta``, an RMSNorm's ``gamma``: TransformerLens's ``weight`` and ``bias``."""
    state = {f"{prefix}.weight": norm.gamma}
    if hasattr(norm, "beta"):
        state[f"{prefix}.bias"] = norm.beta
    return state


# ----------------------------------------------------------------------------- argument checks


def _check_convertible(model) -> None:
    """A DecoderOnly or EncoderOnly whose every choice TransformerLens's own model can make."""
    if not isinstance(model, (DecoderOnly, EncoderOnly)):
        raise TypeError(f"model: expected a DecoderOnly or EncoderOnly model, got {type(model).__name__}")
    cfg = model.cfg
    _refuse("norm_first", cfg.norm_first, True, "TransformerLens's blocks are pre-norm")
    if not cfg.use_final_norm:
        raise ValueError("model.cfg.final_norm: expected None or True (TransformerLens's model ends with a norm), "
                         f"got {cfg.final_norm!r}")
    _refuse("type_vocab_size", cfg.type_vocab_size, 0, "TransformerLens has no token types")
    _refuse("embedding_norm", cfg.embedding_norm, False, "TransformerLens has no norm after the embeddings")
    _refuse("head_transform", cfg.head_transform, False, "TransformerLens's output head is one linear layer")
    if cfg.ffn == "gated":
        _refuse("linear_bias", cfg.linear_bias, False, "TransformerLens's gated feed-forward has no biases")
    if cfg.positional not in ("learned", "sinusoidal", "rope", "none"):
        raise ValueError("model.cfg.positional: expected one of ['learned', 'none', 'rope', 'sinusoidal'] "
                         "(TransformerLens adds positions to the embeddings or rotates queries and keys), "
                         f"got {cfg.positional!r}")


def _refuse(field: str, got, expected, why: str) -> None:
    """Stop at a field of the model's config that TransformerLens cannot express."""
    if got != expected:
        raise ValueError(f"model.cfg.{field}: expected {expected!r} ({why}), got {got!r}")
