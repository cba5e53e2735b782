"""The known mistakes of the exercises of chapter 12, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function with the exercise's signature, most written as the right answer with one step changed.
:mod:`checks.a12` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer.flash import online_softmax_step

from ..core import Mistake

# ----------------------------------------------------------------------------- exercise 2: online softmax


def _online(q, k, v, block_size, sum_power=1, acc_power=1, divide=True, scale=True):
    """Attention over key tiles with the package's online-softmax step; the keyword arguments each break one step:
    the rescaling of the running sum (``sum_power``) or of the values (``acc_power``), the division, the scale."""
    s_scale = 1 / math.sqrt(q.shape[-1]) if scale else 1.0
    m = q.new_full((*q.shape[:-1], 1), -math.inf)  # (..., T_q, 1): the running maximum
    total = q.new_zeros((*q.shape[:-1], 1))  # (..., T_q, 1): the running sum
    acc = q.new_zeros((*q.shape[:-1], v.shape[-1]))  # (..., T_q, d_v): the running weighted sum of values
    for start in range(0, k.shape[-2], block_size):
        s = q @ k[..., start:start + block_size, :].transpose(-2, -1) * s_scale  # (..., T_q, block)
        m, right_total, rescale, p = online_softmax_step(m, total, s)  # p: (..., T_q, block)
        total = right_total if sum_power == 1 else total * rescale ** sum_power + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale ** acc_power + p @ v[..., start:start + block_size, :]  # (..., T_q, d_v)
    return acc / total if divide else acc


ONLINE_MISTAKES = [
    Mistake("not rescaled", "when a later tile raises the running maximum from m to m', what was summed so far "
            "(the running sum and the weighted sum of values) was not rescaled: multiply both by exp(m - m') "
            "before adding the new tile.", lambda q, k, v, b: _online(q, k, v, b, sum_power=0, acc_power=0)),
    Mistake("sum rescaled twice", "the running sum was multiplied by exp(m - m') twice; once is enough, for the "
            "sum and for the weighted sum of values alike.", lambda q, k, v, b: _online(q, k, v, b, sum_power=2)),
    Mistake("values not rescaled", "the running sum was rescaled, but the running weighted sum of values was not: "
            "it was summed with the old maximum too, so it needs the same factor exp(m - m').",
            lambda q, k, v, b: _online(q, k, v, b, acc_power=0)),
    Mistake("not divided", "the weighted sum of values was not divided by the running sum at the end: the weights "
            "exp(s - m) do not add up to 1 until you divide.", lambda q, k, v, b: _online(q, k, v, b, divide=False)),
    Mistake("unscaled", "forgot to divide the scores by sqrt(d_k).", lambda q, k, v, b: _online(q, k, v, b,
                                                                                              scale=False)),
]

# ----------------------------------------------------------------------------- exercise 3: the cache


def _attend(q, k, v):
    return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1) @ v  # (batch, heads, 1, d_h)


def _heads_axis(q, k, v, k_cache, v_cache):
    k_cache, v_cache = torch.cat([k_cache, k], dim=1), torch.cat([v_cache, v], dim=1)  # the wrong axis
    return _attend(q, k_cache, v_cache), k_cache, v_cache


def _prepended(q, k, v, k_cache, v_cache):
    k_cache, v_cache = torch.cat([k, k_cache], dim=2), torch.cat([v, v_cache], dim=2)  # newest first
    return _attend(q, k_cache, v_cache), k_cache, v_cache


def _old_keys_only(q, k, v, k_cache, v_cache):
    out = _attend(q, k_cache, v_cache)  # before the new token joins
    return out, torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)


def _new_key_only(q, k, v, k_cache, v_cache):
    return _attend(q, k, v), torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)


def _not_appended(q, k, v, k_cache, v_cache):
    return _attend(q, torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)), k_cache, v_cache


CACHE_MISTAKES = [
    Mistake("heads axis", "the cache was appended on the wrong axis: the caches are (batch, heads, seq, d_h), and a "
            "new token adds one position on the sequence axis, dim=2 (or -2).", _heads_axis),
    Mistake("prepended", "the new key and value went in front of the cache; append them at the end, so that "
            "position t of the cache stays token t.", _prepended),
    Mistake("old keys only", "the new query attended only to the keys cached before it: append the new token's key "
            "and value first, then attend, since a token also attends to itself.", _old_keys_only),
    Mistake("new key only", "the new query attended only to its own key; it must attend to every cached key and "
            "its own.", _new_key_only),
    Mistake("not appended", "the caches came back as they were given: return them with the new key and value "
            "appended, one position longer.", _not_appended),
]

# ----------------------------------------------------------------------------- exercise 4: repeat_kv


def _interleaved(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)  # (batch, n_kv * n_rep, seq, d_h), in the order h0 h1 .. h0 h1 ..


REPEAT_KV_MISTAKES = [
    Mistake("interleaved", "the heads are repeated in the wrong order: the whole set of kv heads one after the "
            "other (h0 h1 h0 h1), but Llama repeats each kv head n_rep times in a row (h0 h0 h1 h1), so that "
            "query heads g*n_rep .. (g+1)*n_rep - 1 share kv head g.", _interleaved),
    Mistake("sequence axis", "the repetition went along the sequence axis; repeat the heads (dim 1), so that the "
            "result is (batch, n_kv_heads * n_rep, seq, d_h).", lambda x, n_rep: x.repeat_interleave(n_rep, dim=2)),
    Mistake("batch axis", "the repetition went along the batch axis; repeat the heads (dim 1).",
            lambda x, n_rep: x.repeat_interleave(n_rep, dim=0)),
    Mistake("not merged", "the copies have a dimension of their own, (batch, n_kv_heads, n_rep, seq, d_h); "
            "reshape it to (batch, n_kv_heads * n_rep, seq, d_h).",
            lambda x, n_rep: x[:, :, None].expand(-1, -1, n_rep, -1, -1)),
]

# ----------------------------------------------------------------------------- exercise 5: SwiGLU

SWIGLU_MISTAKES = [
    Mistake("gate and up swapped", "SiLU went on the wrong projection: SwiGLU is W2(SiLU(W1 x) * W3 x), SiLU on "
            "x @ W1 (Llama's gate_proj) and x @ W3 (up_proj) left linear.",
            lambda x, w1, w2, w3: (F.silu(x @ w3) * (x @ w1)) @ w2),
    Mistake("SiLU of the product", "SiLU was applied to the product; apply it to x @ W1 alone, then multiply by "
            "x @ W3.", lambda x, w1, w2, w3: F.silu((x @ w1) * (x @ w3)) @ w2),
    Mistake("both activated", "both projections went through SiLU; only x @ W1 does, x @ W3 stays linear.",
            lambda x, w1, w2, w3: (F.silu(x @ w1) * F.silu(x @ w3)) @ w2),
    Mistake("sigmoid", "this uses the sigmoid (GLU); SwiGLU uses SiLU(z) = z * sigmoid(z).",
            lambda x, w1, w2, w3: (torch.sigmoid(x @ w1) * (x @ w3)) @ w2),
    Mistake("ReLU", "this uses ReLU (ReGLU); SwiGLU uses SiLU(z) = z * sigmoid(z).",
            lambda x, w1, w2, w3: (torch.relu(x @ w1) * (x @ w3)) @ w2),
    Mistake("no gate", "the gate is missing: multiply SiLU(x @ W1) by x @ W3, feature by feature, before W2.",
            lambda x, w1, w2, w3: F.silu(x @ w1) @ w2),
    Mistake("no W2", "the result is still d_ff wide: project it back to d_model with W2.",
            lambda x, w1, w2, w3: F.silu(x @ w1) * (x @ w3)),
]
