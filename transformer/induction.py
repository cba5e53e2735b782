"""Induction heads, trained and measured (chapter 13).

A sequence whose second half repeats its first can be continued by copying: having seen
``... A B ... A``, predict ``B``. Two heads in two layers do it together (Elhage et al. 2021;
Olsson et al. 2022): a **previous-token head** writes into each position which token came
before it, and an **induction head** in the next layer, whose keys read that, finds the position
after the earlier ``A`` and copies its token.

- :func:`repeated_tokens`: random sequences, ``<bos>`` then a half then the same half again;
- :func:`induction_model`: a small attention-only decoder to train on them;
- :func:`half_losses`: the loss on the first half and on the repeat, apart;
- :func:`train_induction`: Adam on fresh batches, recording both losses as it goes;
- :func:`previous_token_scores`, :func:`induction_scores`: the papers' attention scores, per head;
- :func:`copying_scores`: how much each head's OV circuit copies the token it attends to.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._validate import require_int, require_positive_int, require_rank
from .config import TransformerConfig
from .interp import stack_of
from .model import DecoderOnly

BOS = 0  # the first token of every sequence; the random tokens are 1 .. vocab_size - 1


def repeated_tokens(batch: int, half: int, vocab_size: int, generator: torch.Generator) -> torch.Tensor:
    """``(batch, 1 + 2 half)`` ids: ``<bos>`` (id 0), ``half`` random tokens, then the same tokens again."""
    for name, value in (("batch", batch), ("half", half)):
        require_positive_int(name, value)
    require_int("vocab_size", vocab_size, 2, expected="an int >= 2 (<bos> and at least one token)")
    first = torch.randint(1, vocab_size, (batch, half), generator=generator)  # (batch, half)
    bos = torch.full((batch, 1), BOS)  # (batch, 1)
    return torch.cat([bos, first, first], dim=1)  # (batch, 1 + 2 half)


def induction_model(vocab_size: int, half: int, d_model: int = 32, n_heads: int = 4, n_layers: int = 2,
                    seed: int = 0, positional: str = "learned") -> DecoderOnly:
    """An attention-only pre-norm decoder (``ffn="none"``) with an untied output layer, for sequences of
    :func:`repeated_tokens` with halves up to ``half``; float64, its weights drawn with ``seed``.
    ``positional``: a scheme of chapter 3 ("learned", "relative", ...). ``d_ff`` is set but unused (no feed-forward)."""
    cfg = TransformerConfig(vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                            d_ff=1, ffn="none", dropout=0.0, max_len=1 + 2 * half, norm_first=True,
                            positional=positional, scale_embeddings=False, tie_weights=False, pad_id=None)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return DecoderOnly(cfg).double()


def half_losses(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy ``(2,)``: on the first half (tokens 2 .. half, the first is a guess)
    and on the repeat (its tokens 2 .. half, predictable by copying). ``logits (batch, seq, vocab)``,
    ``ids (batch, 1 + 2 half)``."""
    require_rank("ids", ids, (2,), "(batch, 1 + 2 half)")
    half = (ids.shape[1] - 1) // 2
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # (batch, seq - 1)
    # losses[:, t] is the loss of predicting token t + 1 from tokens 0 .. t
    return torch.stack([losses[:, 1:half].mean(), losses[:, half + 1:].mean()])  # (2,)


def train_induction(model: DecoderOnly, steps: int, batch: int = 32, lr: float = 1e-3, seed: int = 0,
                    every: int = 10, shortest: int = 4) -> dict[str, torch.Tensor]:
    """Train ``model`` with Adam on fresh batches of :func:`repeated_tokens`; every ``every`` steps record
    the two :func:`half_losses` of that batch. Returns ``{"step": (n,), "losses": (n, 2)}``.

    Each batch draws its half length from ``shortest`` to the longest that fits ``model.cfg.max_len``:
    with one fixed length, a head could find the copy by its distance alone, with no induction."""
    require_positive_int("steps", steps)
    cfg = model.cfg
    longest = (cfg.max_len - 1) // 2
    require_int("shortest", shortest, 2, longest, expected=f"an int in [2, {longest}] (the longest half that fits)")
    g = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    steps_seen, curve = [], []
    for step in range(1, steps + 1):
        half = int(torch.randint(shortest, longest + 1, (), generator=g))
        ids = repeated_tokens(batch, half, cfg.vocab_size, g)  # (batch, 1 + 2 half)
        logits = model(ids)  # (batch, seq, vocab)
        first, repeat = half_losses(logits, ids)
        loss = (first * (half - 1) + repeat * (half - 1)) / (2 * half - 2)  # the mean over both halves
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % every == 0 or step == 1:
            steps_seen.append(step)
            curve.append(torch.stack([first, repeat]).detach())
    model.eval()
    return {"step": torch.tensor(steps_seen), "losses": torch.stack(curve)}


def previous_token_scores(pattern: torch.Tensor) -> torch.Tensor:
    """Mean weight from each position ``t >= 1`` on ``t - 1``: ``pattern (batch, heads, T, T)`` -> ``(heads,)``."""
    require_rank("pattern", pattern, (4,), "(batch, heads, T_q, T_k)")
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))  # (batch, heads, T - 1) -> (heads,)


def induction_scores(pattern: torch.Tensor, half: int) -> torch.Tensor:
    """Prefix matching: the mean weight from each position of the repeat on the position just after the same
    token's first occurrence, ``half - 1`` back; ``pattern (batch, heads, 1 + 2 half, 1 + 2 half)`` ->
    ``(heads,)``. Position ``t = half + 1 + i`` holds the repeat's token ``i``, first seen at ``1 + i``."""
    require_rank("pattern", pattern, (4,), "(batch, heads, T_q, T_k)")
    require_int("half", half, 1, (pattern.shape[-1] - 1) // 2, expected=f"the half length, (T - 1) / 2 of the "
                f"pattern's T={pattern.shape[-1]}")
    stripe = pattern.diagonal(offset=-(half - 1), dim1=-2, dim2=-1)  # (batch, heads, T - half + 1): w[t, t - half + 1]
    return stripe[..., 2:].mean(dim=(0, 2))  # queries t >= half + 1, the repeat -> (heads,)


def copying_scores(model, layer: int) -> torch.Tensor:
    """``(heads,)``: for each head of block ``layer``, ``sum(eig) / sum(|eig|)`` (real parts over moduli) of its
    OV circuit from tokens to logits, ``W_U W^O_h W^V_h W_E`` (Elhage et al. 2021), norms left out. Near 1:
    attending to a token raises that token's logit, the head copies."""
    blocks = stack_of(model).layers
    require_int("layer", layer, 0, len(blocks) - 1)
    attn = blocks[layer].self_attn
    w_e, w_u = model.embed.tokens.weight, model.head.weight  # (vocab, d_model) each
    scores = []
    for h in range(attn.n_heads):
        rows = slice(h * attn.d_h, (h + 1) * attn.d_h)
        w_v, w_o = attn.w_v.weight[rows], attn.w_o.weight[:, rows]  # (d_h, d_model), (d_model, d_h)
        # W_U W_O W_V W_E^T is (vocab, vocab) of rank d_h: its nonzero eigenvalues are those of this (d_h, d_h)
        small = w_v @ w_e.T @ w_u @ w_o  # (d_h, d_model) (d_model, vocab) (vocab, d_model) (d_model, d_h)
        eig = torch.linalg.eigvals(small.detach())  # (d_h,) complex
        scores.append(eig.real.sum() / eig.abs().sum())
    return torch.stack(scores)  # (heads,)
