"""Mixture of experts: a router sends each token to ``k`` of ``n`` feed-forward networks (chapter 14).

The router scores every expert, ``s = x W_r^T`` ``(tokens, n_experts)``; each token goes to its ``top_k`` experts,
and the layer's output is the weighted sum of theirs, ``sum_e g_e FFN_e(x)`` (Shazeer et al. 2017; Switch,
Fedus et al. 2021). The parameters grow with ``n_experts``; the work per token with ``top_k`` only.

How the weights ``g`` are made differs by model (Hugging Face's ``transformers/models/...``):

- Mixtral (``mixtral/modeling_mixtral.py``, ``MixtralTopKRouter``): softmax over all the experts *before* the
  top-k, then the kept weights renormalised to sum to 1: ``scoring="softmax", renormalize=True``;
- Qwen3-MoE (``qwen3_moe/modeling_qwen3_moe.py``, ``Qwen3MoeTopKRouter``): the same softmax before the top-k,
  renormalised only if ``config.norm_topk_prob`` (``renormalize``); its layers are sparse where
  ``layer not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0``;
- DeepSeek-V3 (``deepseek_v3/modeling_deepseek_v3.py``, ``DeepseekV3TopkRouter``): sigmoid scores
  (``scoring="sigmoid"``); the experts are *chosen* on scores plus a correction ``bias`` (one per expert, used
  for nothing else), within the ``topk_groups`` best of ``n_groups`` groups (a group's score: the sum of its two
  best); the weights are the plain scores, renormalised if ``norm_topk_prob``, times ``routed_scaling_factor``
  (``scaling``); ``n_shared`` shared experts see every token; the first ``first_k_dense_replace`` layers are dense.

Balancing: :func:`load_balancing_loss` is the auxiliary loss of Switch and Mixtral, ``n sum_i f_i P_i`` (``f_i``
the share of choices that went to expert ``i``, ``P_i`` its mean router probability), as
``load_balancing_loss_func`` in ``modeling_mixtral.py``. DeepSeek-V3 balances without it:
:func:`update_correction_bias` raises the bias of an underloaded expert and lowers an overloaded one's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ._validate import (
    require_choice,
    require_float,
    require_int,
    require_last_dim,
    require_number,
    require_positive_int,
    require_rank,
    require_sizes,
    require_token_ids,
)
from .feedforward import GatedFeedForward

SCORINGS = ("softmax", "sigmoid")


@dataclass
class MoEConfig:
    """The experts of a :class:`~transformer.config.TransformerConfig` (its field ``moe``)."""

    n_experts: int
    top_k: int = 2
    d_expert: int | None = None  # each expert's hidden size; None = the config's d_ff
    n_shared: int = 0  # shared experts, one SwiGLU of n_shared * d_expert that every token goes through (DeepSeek)
    scoring: str = "softmax"  # "softmax" (Mixtral, Qwen3-MoE) or "sigmoid" (DeepSeek-V3)
    renormalize: bool = True  # the kept weights divided by their sum (Hugging Face's norm_topk_prob)
    n_groups: int = 1  # DeepSeek-V3's groups of experts (n_group) ...
    topk_groups: int = 1  # ... of which each token may use the best topk_group
    scaling: float = 1.0  # routed_scaling_factor: the routed experts' sum is multiplied by it
    layers: tuple | None = None  # which layers have experts (a bool per layer); None = all

    def __post_init__(self):
        require_positive_int("n_experts", self.n_experts)
        require_int("top_k", self.top_k, 1, self.n_experts, expected=f"an int in [1, n_experts={self.n_experts}]")
        require_choice("scoring", self.scoring, SCORINGS)
        require_int("n_groups", self.n_groups, 1, self.n_experts, expected="an int dividing n_experts")
        if self.n_experts % self.n_groups:
            raise ValueError(f"n_groups: expected a divisor of n_experts={self.n_experts}, got {self.n_groups}")
        require_int("topk_groups", self.topk_groups, 1, self.n_groups, expected=f"an int in [1, {self.n_groups}]")
        require_int("n_shared", self.n_shared, low=0, expected="an int >= 0")
        require_number("scaling", self.scaling, low=0, open_low=True)


class Router(nn.Module):
    """``x (tokens, d_model)`` -> weights ``(tokens, top_k)``, experts ``(tokens, top_k)`` and the router's
    probabilities (softmax) or scores (sigmoid) ``(tokens, n_experts)``."""

    def __init__(self, d_model: int, moe: MoEConfig):
        super().__init__()
        if not isinstance(moe, MoEConfig):
            raise TypeError(f"moe: expected a MoEConfig, got {type(moe).__name__}")
        self.weight = nn.Parameter(torch.randn(moe.n_experts, d_model) * d_model ** -0.5)  # W_r
        self.register_buffer("bias", torch.zeros(moe.n_experts))  # DeepSeek-V3's correction, for choosing only
        self.moe = moe

    def forward(self, x: torch.Tensor):
        _check_tokens(x, self.weight.shape[1], (2,), "(tokens, d_model)")
        return self._route(x)

    def _route(self, x: torch.Tensor):  # forward on x already checked (the experts' layer)
        m = self.moe
        logits = x @ self.weight.T  # (tokens, n_experts)
        probs = logits.softmax(dim=-1) if m.scoring == "softmax" else logits.sigmoid()  # softmax before the top-k
        choice = probs if m.scoring == "softmax" else probs + self.bias  # the bias chooses, it does not weigh
        if m.n_groups > 1:
            choice = _best_groups(choice, m.n_groups, m.topk_groups)
        experts = choice.topk(m.top_k, dim=-1).indices  # (tokens, top_k)
        weights = probs.gather(1, experts)  # (tokens, top_k)
        if m.renormalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights * m.scaling, experts, probs


def _best_groups(choice: torch.Tensor, n_groups: int, topk_groups: int) -> torch.Tensor:
    """``choice (tokens, n_experts)`` with the experts outside each token's ``topk_groups`` best groups at -inf; a
    group's score is the sum of its two best (DeepSeek-V3's group-limited routing)."""
    tokens, n = choice.shape
    grouped = choice.view(tokens, n_groups, n // n_groups)  # (tokens, n_groups, experts per group)
    group_scores = grouped.topk(min(2, n // n_groups), dim=-1).values.sum(dim=-1)  # (tokens, n_groups)
    best = group_scores.topk(topk_groups, dim=-1).indices  # (tokens, topk_groups)
    keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter(1, best, True)  # (tokens, n_groups)
    keep = keep[:, :, None].expand_as(grouped).reshape(tokens, n)  # (tokens, n_experts)
    return choice.masked_fill(~keep, float("-inf"))


class MixtureOfExperts(nn.Module):
    """``(batch, seq, d_model) -> (batch, seq, d_model)``: each token through its ``top_k`` SwiGLU experts, weighted
    by the router, plus the shared experts. After a call, ``routing`` holds the last ``(probs, experts)``."""

    def __init__(self, d_model: int, d_expert: int, moe: MoEConfig, activation: str = "silu"):
        super().__init__()
        self.router = Router(d_model, moe)
        self.experts = nn.ModuleList(GatedFeedForward(d_model, d_expert, 0.0, activation) for _ in
                                     range(moe.n_experts))
        shared = moe.n_shared * d_expert
        self.shared = GatedFeedForward(d_model, shared, 0.0, activation) if shared else None
        self.routing: tuple[torch.Tensor, torch.Tensor] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_tokens(x, self.router.weight.shape[1], (3,), "(batch, seq, d_model)")
        batch, seq, d_model = x.shape
        flat = x.reshape(batch * seq, d_model)  # (tokens, d_model)
        weights, experts, probs = self.router._route(flat)  # (tokens, top_k) twice, (tokens, n_experts)
        self.routing = (probs, experts)
        out = torch.zeros_like(flat)  # (tokens, d_model)
        for e, expert in enumerate(self.experts):
            token, slot = torch.where(experts == e)  # the tokens that chose expert e, and in which of their slots
            if len(token):
                out.index_add_(0, token, expert(flat[token]) * weights[token, slot, None])
        if self.shared is not None:
            out = out + self.shared(flat)
        return out.view(batch, seq, d_model)  # (tokens, d_model) -> (batch, seq, d_model)


def load_balancing_loss(probs: torch.Tensor, experts: torch.Tensor, n_experts: int) -> torch.Tensor:
    """Switch's and Mixtral's auxiliary loss, ``n_experts * sum_i f_i P_i``: ``probs (tokens, n_experts)`` the
    router's softmax, ``experts (tokens, top_k)`` the choices. ``f_i``: choices of expert ``i`` per token (they sum
    to ``top_k``), ``P_i``: its mean probability. 1 per chosen expert when the load is even; larger when not."""
    _check_routing(probs, experts)
    f = torch.zeros(n_experts, dtype=probs.dtype, device=probs.device)
    f = f.index_add(0, experts.reshape(-1), torch.ones(experts.numel(), dtype=probs.dtype)) / probs.shape[0]
    return n_experts * (f * probs.mean(dim=0)).sum()


def update_correction_bias(bias: torch.Tensor, experts: torch.Tensor, rate: float = 1e-3) -> torch.Tensor:
    """DeepSeek-V3's balancing without a loss: each expert's bias ``(n_experts,)`` moves by ``rate`` up if it got
    fewer than the mean of the choices ``experts (tokens, top_k)``, down if more. Returns the new bias."""
    require_float("bias", bias)
    require_rank("bias", bias, (1,), "(n_experts,)")
    require_token_ids("experts", experts, bias.shape[0], ranks=(2,), layout="(tokens, top_k)", what="expert indices")
    require_number("rate", rate, low=0)
    load = torch.bincount(experts.reshape(-1), minlength=bias.shape[0]).to(bias.dtype)  # (n_experts,)
    return bias + rate * torch.sign(load.mean() - load)


def moe_for(cfg, layer: int) -> MixtureOfExperts | None:
    """Layer ``layer``'s experts under a :class:`~transformer.config.TransformerConfig`, or None (a dense layer)."""
    moe = cfg.moe
    if moe is None or (moe.layers is not None and not moe.layers[layer]):
        return None
    return MixtureOfExperts(cfg.d_model, moe.d_expert or cfg.d_ff, moe, cfg.activation)


# ----------------------------------------------------------------------------- argument checks


def _check_tokens(x, d_model: int, ranks: tuple[int, ...], layout: str) -> None:
    """Floating-point tokens of ``d_model`` features."""
    require_float("x", x)
    require_rank("x", x, ranks, layout)
    require_last_dim("x", x, d_model)


def _check_routing(probs, experts) -> None:
    """``probs (tokens, n_experts)`` and the experts chosen, ``(tokens, top_k)`` indices below ``n_experts``."""
    require_float("probs", probs)
    require_rank("probs", probs, (2,), "(tokens, n_experts)")
    require_token_ids("experts", experts, probs.shape[1], ranks=(2,), layout="(tokens, top_k)", what="expert indices")
    require_sizes("experts", experts, (probs.shape[0], None), f"(tokens={probs.shape[0]}, top_k)")
