"""Hugging Face's GPT-2, BERT and Llama as configurations of ours: the same network, the same outputs.

:func:`from_hf` reads a Hugging Face model's config, builds the same network
from this package's parts, and copies the weights in:

====================================  ==================================================================
Hugging Face                          ours
====================================  ==================================================================
``GPT2LMHeadModel``, ``GPT2Model``    :class:`~transformer.model.DecoderOnly`: pre-norm, learned positions,
                                      ``activation="gelu_tanh"``, ``scale_embeddings=False``, a final norm
``BertForMaskedLM``, ``BertModel``    :class:`~transformer.model.EncoderOnly`: post-norm, learned positions,
                                      token types, ``embedding_norm``, ``head_transform``, ``head_bias``
``LlamaForCausalLM``, ``LlamaModel``  :class:`~transformer.model.DecoderOnly`: pre-norm with ``norm="rms"``,
                                      ``ffn="gated"`` with ``"silu"`` (SwiGLU), RoPE with ``rope_pairs="half"``,
                                      ``linear_bias=False``, ``n_kv_heads`` (grouped-query) (chapter 12);
                                      ``rope_scaling`` of type ``linear``, ``yarn``, ``llama3`` (chapter 14)
``MistralForCausalLM``,               Llama's configuration with a sliding window, experts, Qwen3's q/k norms
``MixtralForCausalLM``,               or latent attention (chapter 14): :mod:`transformer.hf_open_models`
``Qwen3MoeForCausalLM``,
``DeepseekV3ForCausalLM``
====================================  ==================================================================

Nothing is patched: every difference from the 2017 model is a field of
:class:`~transformer.config.TransformerConfig`. Two storage details are
translated while copying: GPT-2's ``Conv1D`` keeps ``W`` as ``(in, out)`` (we
keep ``(out, in)``, like ``nn.Linear``), and its ``c_attn`` holds ``W^Q, W^K,
W^V`` side by side in one ``(d_model, 3 d_model)`` matrix.

``transformers`` is an optional dependency (``pip install -e ".[hf]"``); it is
imported only when :func:`from_hf` is called.
"""

from __future__ import annotations

import torch
from torch import nn

from .config import TransformerConfig
from .hf_open_models import from_open_model
from .interop import copy_layer_norm, copy_linear, copy_tensor
from .model import DecoderOnly, EncoderOnly

# Hugging Face's names for the activations that ours compute exactly (ACT2FN in transformers.activations).
HF_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                  "silu": "silu"}
SUPPORTED = ("GPT2LMHeadModel", "GPT2Model", "BertForMaskedLM", "BertModel", "LlamaForCausalLM", "LlamaModel",
             "MistralForCausalLM", "MixtralForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM")
SCALINGS = ("default", "linear", "yarn", "llama3")  # the RoPE scalings of a fixed table (chapter 14)


def _transformers():
    try:
        import transformers
    except ImportError as err:
        raise ImportError("from_hf needs the optional dependency `transformers`: "
                          "pip install -e \".[hf]\"") from err
    return transformers


def gpt2_config(c) -> TransformerConfig:
    """Our configuration of a ``GPT2Config``: pre-norm, learned positions, GELU (tanh), unscaled embeddings."""
    _refuse("scale_attn_weights", c.scale_attn_weights, True)
    _refuse("scale_attn_by_inverse_layer_idx", c.scale_attn_by_inverse_layer_idx, False)
    _refuse("add_cross_attention", c.add_cross_attention, False)
    return TransformerConfig(
        vocab_size=c.vocab_size, d_model=c.n_embd, n_heads=c.n_head, d_ff=c.n_inner or 4 * c.n_embd,
        n_layers=c.n_layer, dropout=float(c.resid_pdrop), max_len=c.n_positions, norm_first=True,
        norm_eps=c.layer_norm_epsilon, final_norm=True, activation=_activation("activation_function",
                                                                                 c.activation_function),
        positional="learned", tie_weights=c.tie_word_embeddings, pad_id=c.pad_token_id, scale_embeddings=False,
    )


def bert_config(c) -> TransformerConfig:
    """Our configuration of a ``BertConfig``: post-norm, learned positions, token types, BERT's embedding norm
    and masked-language-model head (dense, activation, norm, then the tied output layer with a bias)."""
    _refuse("is_decoder", c.is_decoder, False)
    _refuse("add_cross_attention", c.add_cross_attention, False)
    _refuse("position_embedding_type", getattr(c, "position_embedding_type", "absolute"), "absolute")
    return TransformerConfig(
        vocab_size=c.vocab_size, d_model=c.hidden_size, n_heads=c.num_attention_heads, d_ff=c.intermediate_size,
        n_layers=c.num_hidden_layers, dropout=float(c.hidden_dropout_prob), max_len=c.max_position_embeddings,
        norm_first=False, norm_eps=c.layer_norm_eps, activation=_activation("hidden_act", c.hidden_act),
        positional="learned", tie_weights=c.tie_word_embeddings, pad_id=c.pad_token_id, scale_embeddings=False,
        embedding_norm=True, type_vocab_size=c.type_vocab_size, head_transform=True, head_bias=True,
    )


def llama_config(c) -> TransformerConfig:
    """Our configuration of a ``LlamaConfig`` (chapter 12): pre-norm RMSNorm, SwiGLU, RoPE on half-split pairs,
    no biases, ``num_key_value_heads`` key/value heads, unscaled embeddings, a final norm; RoPE scaled by
    ``rope_parameters`` of type ``linear``, ``yarn`` or ``llama3`` (chapter 14, :mod:`transformer.rope_scaling`).
    Mistral's, Mixtral's, Qwen3-MoE's and DeepSeek-V3's configs are Llama's with more fields
    (:func:`~transformer.hf_open_models.open_model_config`)."""
    rope = getattr(c, "rope_parameters", None) or {"rope_type": "default", "rope_theta": 10000.0}
    if rope.get("rope_type", "default") not in SCALINGS:
        raise ValueError(f"config.rope_parameters['rope_type']: expected 'default', 'linear', 'yarn' or 'llama3' "
                         f"(a fixed table of angles), got {rope['rope_type']!r}")
    _refuse("head_dim", getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads,
            c.hidden_size // c.num_attention_heads)
    _refuse("mlp_bias", getattr(c, "mlp_bias", False), getattr(c, "attention_bias", False))  # one switch for both
    scaling = None if rope.get("rope_type", "default") == "default" else dict(rope)
    return TransformerConfig(
        vocab_size=c.vocab_size, d_model=c.hidden_size, n_heads=c.num_attention_heads,
        n_kv_heads=c.num_key_value_heads or c.num_attention_heads, d_ff=c.intermediate_size,
        n_layers=c.num_hidden_layers, dropout=float(c.attention_dropout), max_len=c.max_position_embeddings,
        norm_first=True, norm="rms", norm_eps=c.rms_norm_eps, final_norm=True,
        activation=_activation("hidden_act", c.hidden_act), ffn="gated",
        linear_bias=bool(getattr(c, "attention_bias", False)), positional="rope", rope_pairs="half",
        rope_base=float(rope["rope_theta"]), rope_scaling=scaling, tie_weights=c.tie_word_embeddings,
        pad_id=c.pad_token_id, scale_embeddings=False,
    )


def _copy_llama(ours: DecoderOnly, llama) -> None:
    """Copy a ``LlamaModel``'s weights (``embed_tokens``, the ``layers``, ``norm``) into ours."""
    copy_tensor(ours.embed.tokens.weight, llama.embed_tokens.weight, "embed_tokens")
    for block, theirs in zip(ours.causal_stack.layers, llama.layers):
        attn, mlp = theirs.self_attn, theirs.mlp
        pairs = ((block.self_attn.w_q, attn.q_proj), (block.self_attn.w_k, attn.k_proj),
                 (block.self_attn.w_v, attn.v_proj), (block.self_attn.w_o, attn.o_proj),
                 (block.ff.linear1, mlp.gate_proj), (block.ff.linear3, mlp.up_proj), (block.ff.linear2, mlp.down_proj))
        for ours_linear, their_linear in pairs:
            copy_linear(ours_linear, their_linear)
        copy_tensor(block.norm1.gamma, theirs.input_layernorm.weight, "input_layernorm")
        copy_tensor(block.norm2.gamma, theirs.post_attention_layernorm.weight, "post_attention_layernorm")
    copy_tensor(ours.causal_stack.norm.gamma, llama.norm.weight, "norm")


def _from_llama(model, tf) -> DecoderOnly:
    llama = model.model if isinstance(model, tf.LlamaForCausalLM) else model
    ours = DecoderOnly(llama_config(model.config)).to(llama.embed_tokens.weight.dtype)
    _copy_llama(ours, llama)
    if isinstance(model, tf.LlamaForCausalLM) and not ours.head.tied:
        copy_tensor(ours.head.weight, model.lm_head.weight, "lm_head.weight")
    return ours


def _copy_conv1d(ours: nn.Linear, weight: torch.Tensor, bias: torch.Tensor, what: str) -> None:
    """A GPT-2 ``Conv1D`` computes ``x W + b`` with ``W (in, out)``; ``nn.Linear`` keeps ``W^T (out, in)``."""
    copy_tensor(ours.weight, weight.T, f"{what} weight")  # (in, out) -> (out, in)
    copy_tensor(ours.bias, bias, f"{what} bias")


def _copy_gpt2(ours: DecoderOnly, gpt2) -> None:
    """Copy a ``GPT2Model``'s weights (``wte``, ``wpe``, the blocks ``h``, ``ln_f``) into ours."""
    copy_tensor(ours.embed.tokens.weight, gpt2.wte.weight, "wte")
    copy_tensor(ours.embed.positions.weight, gpt2.wpe.weight, "wpe")
    d = gpt2.config.n_embd
    for i, (block, theirs) in enumerate(zip(ours.causal_stack.layers, gpt2.h)):
        attn = block.self_attn
        weights = theirs.attn.c_attn.weight.split(d, dim=1)  # (d, 3 d) -> 3 x (d, d): W^Q, W^K, W^V
        biases = theirs.attn.c_attn.bias.split(d)  # (3 d,) -> 3 x (d,)
        for name, w, b in zip(("w_q", "w_k", "w_v"), weights, biases):
            _copy_conv1d(getattr(attn, name), w, b, f"h.{i}.attn.c_attn ({name})")
        _copy_conv1d(attn.w_o, theirs.attn.c_proj.weight, theirs.attn.c_proj.bias, f"h.{i}.attn.c_proj")
        _copy_conv1d(block.ff.linear1, theirs.mlp.c_fc.weight, theirs.mlp.c_fc.bias, f"h.{i}.mlp.c_fc")
        _copy_conv1d(block.ff.linear2, theirs.mlp.c_proj.weight, theirs.mlp.c_proj.bias, f"h.{i}.mlp.c_proj")
        copy_layer_norm(block.norm1, theirs.ln_1)
        copy_layer_norm(block.norm2, theirs.ln_2)
    copy_layer_norm(ours.causal_stack.norm, gpt2.ln_f)


def _copy_bert(ours: EncoderOnly, bert) -> None:
    """Copy a ``BertModel``'s weights (embeddings, encoder layers; not the pooler) into ours."""
    emb = bert.embeddings
    copy_tensor(ours.embed.tokens.weight, emb.word_embeddings.weight, "word_embeddings")
    copy_tensor(ours.embed.positions.weight, emb.position_embeddings.weight, "position_embeddings")
    copy_tensor(ours.embed.types.weight, emb.token_type_embeddings.weight, "token_type_embeddings")
    copy_layer_norm(ours.embed.norm, emb.LayerNorm)
    for block, theirs in zip(ours.encoder.layers, bert.encoder.layer):
        attn, mha = theirs.attention, block.self_attn
        pairs = ((mha.w_q, attn.self.query), (mha.w_k, attn.self.key), (mha.w_v, attn.self.value),
                 (mha.w_o, attn.output.dense), (block.ff.linear1, theirs.intermediate.dense),
                 (block.ff.linear2, theirs.output.dense))
        for ours_linear, their_linear in pairs:
            copy_linear(ours_linear, their_linear)
        copy_layer_norm(block.norm1, attn.output.LayerNorm)
        copy_layer_norm(block.norm2, theirs.output.LayerNorm)


def _copy_mlm_head(ours: EncoderOnly, predictions) -> None:
    """BERT's ``cls.predictions``: the transform, the bias, and the output matrix unless it is the tied embedding."""
    copy_linear(ours.head.transform.dense, predictions.transform.dense)
    copy_layer_norm(ours.head.transform.norm, predictions.transform.LayerNorm)
    copy_tensor(ours.head.bias, predictions.decoder.bias, "cls.predictions.decoder.bias")
    if not ours.head.tied:
        copy_tensor(ours.head.weight, predictions.decoder.weight, "cls.predictions.decoder.weight")


def from_hf(model: nn.Module) -> DecoderOnly | EncoderOnly:
    """Our model with the configuration and the weights of a Hugging Face GPT-2, BERT or Llama ``model``.

    ``GPT2LMHeadModel`` -> :class:`~transformer.model.DecoderOnly` with the same logits; ``GPT2Model`` ->
    ``DecoderOnly`` whose :meth:`~transformer.model.DecoderOnly.hidden` equals ``last_hidden_state`` (after
    ``ln_f``). ``BertForMaskedLM`` -> :class:`~transformer.model.EncoderOnly` with the same logits; ``BertModel``
    -> ``EncoderOnly`` whose ``encode(ids, token_type_ids)`` equals ``last_hidden_state`` (its MLM head is left
    as initialised, and BERT's pooler is not converted). ``LlamaForCausalLM`` and ``LlamaModel`` -> ``DecoderOnly``
    like GPT-2's (chapter 12), grouped-query configs included, RoPE scaled or not (chapter 14).
    ``MistralForCausalLM``, ``MixtralForCausalLM``, ``Qwen3MoeForCausalLM`` and ``DeepseekV3ForCausalLM`` ->
    ``DecoderOnly`` with the same logits (chapter 14, :func:`~transformer.hf_open_models.from_open_model`).

    Padding: Hugging Face takes an ``attention_mask``; ours hides the tokens equal to its ``pad_id``, which is
    ``config.pad_token_id`` (None for GPT-2: no padding mask). The outputs are equal when Hugging Face gets
    ``attention_mask = (ids != pad_token_id)`` and no query row is entirely padding.

    Dropout: ours has one rate (GPT-2's ``resid_pdrop``, BERT's ``hidden_dropout_prob``) and drops at slightly
    different places, so only eval-mode outputs are equal. The returned model is in the mode of ``model`` and
    has its dtype. A config we cannot express (e.g. ``scale_attn_by_inverse_layer_idx=True``, an activation
    not in ``HF_ACTIVATIONS``, cross-attention) raises a ``ValueError`` naming the field.
    """
    if not isinstance(model, nn.Module):
        raise _unsupported(model)
    tf = _transformers()
    if isinstance(model, (tf.GPT2LMHeadModel, tf.GPT2Model)):
        gpt2 = model.transformer if isinstance(model, tf.GPT2LMHeadModel) else model
        ours = DecoderOnly(gpt2_config(model.config)).to(gpt2.wte.weight.dtype)
        _copy_gpt2(ours, gpt2)
        if isinstance(model, tf.GPT2LMHeadModel) and not ours.head.tied:
            copy_tensor(ours.head.weight, model.lm_head.weight, "lm_head.weight")
    elif isinstance(model, (tf.BertForMaskedLM, tf.BertModel)):
        bert = model.bert if isinstance(model, tf.BertForMaskedLM) else model
        ours = EncoderOnly(bert_config(model.config)).to(bert.embeddings.word_embeddings.weight.dtype)
        _copy_bert(ours, bert)
        if isinstance(model, tf.BertForMaskedLM):
            _copy_mlm_head(ours, model.cls.predictions)
    elif isinstance(model, (tf.LlamaForCausalLM, tf.LlamaModel)):
        ours = _from_llama(model, tf)
    elif isinstance(model, (tf.MistralForCausalLM, tf.MixtralForCausalLM, tf.Qwen3MoeForCausalLM,
                            tf.DeepseekV3ForCausalLM)):  # chapter 14
        ours = from_open_model(model, llama_config)
    else:
        raise _unsupported(model)
    return ours.train(model.training)


# ----------------------------------------------------------------------------- argument checks


def _refuse(name: str, got, expected) -> None:
    """Stop at a Hugging Face config value that our configuration cannot express."""
    if got != expected:
        raise ValueError(f"config.{name}: expected {expected!r} (the only value this package expresses), got {got!r}")


def _activation(name: str, value) -> str:
    """Our name of Hugging Face's activation ``value``; one we do not compute exactly is refused."""
    if value not in HF_ACTIVATIONS:
        raise ValueError(f"config.{name}: expected one of {sorted(HF_ACTIVATIONS)}, got {value!r}")
    return HF_ACTIVATIONS[value]


def _unsupported(model) -> TypeError:
    return TypeError(f"model: expected a Hugging Face {', '.join(SUPPORTED)}, got {type(model).__name__}")
