"""Induction heads, trained and measured (chapter 13).

A sequence whose second half repeats its first can be continued by copying: having seen
``... A B ... A``, predict ``B``. Two heads in two layers do it together (Elhage et al. 2021;
Olsson et al. 2022): a **previous-token head** writes into each position which token came
before it, and an **induction head** in the next layer, whose keys read that, finds the position
after the earlier ``A`` and copies its token.

- :func:`repeated_tokens`: random sequences, ``<bos>`` then a half then the same half again;
- :func:`induction_model`: a small attention-only decoder to train on them;
- :func:`half_losses`: the loss on the first half and on the repeat, apart;
- :func:`train_induction`: Adam on fresh batches, recording both losses (and, on held-out sequences, every head's
  prefix-matching score) as it goes;
- :func:`seen_tokens_loss`: what a model that does not copy pays on the repeat, betting on the tokens seen;
- :func:`previous_token_scores`, :func:`induction_scores`: the papers' attention scores, per head;
- :func:`copying_scores`: how much each head's OV circuit copies the token it attends to;
- :func:`composition_scores`, :func:`random_composition_score`: how much a later head reads, through its queries,
  keys or values, what an earlier head writes, from the weights, and the same for random matrices.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import require_choice, require_int, require_positive_int, require_rank
from .config import TransformerConfig
from .interp import run_with_cache, stack_of
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
                    every: int = 10, shortest: int = 4, probe: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Train ``model`` with Adam on fresh batches of :func:`repeated_tokens`; every ``every`` steps record
    the two :func:`half_losses` of that batch. Returns ``{"step": (n,), "losses": (n, 2)}``, and with ``probe``,
    held-out ids ``(batch, 1 + 2 half)`` of :func:`repeated_tokens`, also ``"scores": (n, layers, heads)``, every
    head's :func:`induction_scores` on them at the same steps (the training batches are the same with or without).

    Each batch draws its half length from ``shortest`` to the longest that fits ``model.cfg.max_len``:
    with one fixed length, a head could find the copy by its distance alone, with no induction."""
    require_positive_int("steps", steps)
    if probe is not None:
        require_rank("probe", probe, (2,), "(batch, 1 + 2 half)")
    cfg = model.cfg
    longest = (cfg.max_len - 1) // 2
    require_int("shortest", shortest, 2, longest, expected=f"an int in [2, {longest}] (the longest half that fits)")
    g = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    steps_seen, curve, scores = [], [], []
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
            if probe is not None:
                scores.append(_probe_scores(model, probe))
    model.eval()
    found = {"step": torch.tensor(steps_seen), "losses": torch.stack(curve)}
    return found | ({"scores": torch.stack(scores)} if probe is not None else {})  # (n, layers, heads)


def _probe_scores(model: DecoderOnly, probe: torch.Tensor) -> torch.Tensor:
    """``(layers, heads)``: every head's prefix-matching score on ``probe`` (the model's mode is left as it was)."""
    n = len(stack_of(model).layers)
    _, cache = run_with_cache(model, probe, names=[f"blocks.{i}.attn.pattern" for i in range(n)])
    return torch.stack([induction_scores(cache[f"blocks.{i}.attn.pattern"], (probe.shape[1] - 1) // 2)
                        for i in range(n)])  # (layers, heads)


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


def seen_tokens_loss(vocab_size: int, shortest: int, longest: int) -> float:
    """The mean loss on the repeat (nats) of a model that does not copy but bets evenly on the distinct tokens the
    sequence holds: ``ln D`` for ``D`` distinct tokens among ``half`` drawn from ``vocab_size - 1``, its expectation
    computed exactly (``P(D = k) = C(K, k) k! S(half, k) / K^half``, ``S`` Stirling numbers of the second kind), then
    averaged over the half lengths ``shortest .. longest`` that :func:`train_induction` draws evenly."""
    require_int("vocab_size", vocab_size, 2, expected="an int >= 2 (<bos> and at least one token)")
    require_int("shortest", shortest, 1)
    require_int("longest", longest, shortest, expected=f"an int >= shortest={shortest}")
    tokens = vocab_size - 1
    means = []
    for half in range(shortest, longest + 1):
        stirling = [1] + [0] * half  # S(0, k)
        for _ in range(half):  # row n from row n - 1: S(n, k) = k S(n - 1, k) + S(n - 1, k - 1)
            stirling = [0] + [k * stirling[k] + stirling[k - 1] for k in range(1, half + 1)]
        means.append(sum(math.comb(tokens, k) * math.factorial(k) * stirling[k] / tokens ** half * math.log(k)
                         for k in range(1, half + 1)))
    return sum(means) / len(means)


def composition_scores(model, mode: str) -> torch.Tensor:
    """``(layers, heads, layers, heads)``: entry ``[l1, h1, l2, h2]`` says how much head ``h2`` of block ``l2`` reads,
    through its queries (``mode="Q"``), keys (``"K"``) or values (``"V"``), the subspace head ``h1`` of an earlier
    block ``l1`` writes (Elhage et al. 2021): ``|W_OV^1 M|_F / (|W_OV^1|_F |M|_F)`` with ``M = W_QK^2`` (Q),
    ``(W_QK^2)^T`` (K) or ``W_OV^2`` (V), for a row vector ``x``: ``x W_OV`` is what a head writes when it attends to
    ``x``, ``x_q W_QK x_k^T`` its score. From the weights alone, norms left out; zero unless ``l1 < l2``."""
    require_choice("mode", mode, ("Q", "K", "V"))
    circuits = [_circuits(block.self_attn) for block in stack_of(model).layers]  # per block: (OV, QK) (heads, d, d)
    ov = torch.stack([c[0] for c in circuits])  # (layers, heads, d_model, d_model)
    qk = torch.stack([c[1] for c in circuits])  # (layers, heads, d_model, d_model)
    right = {"Q": qk, "K": qk.transpose(-2, -1), "V": ov}[mode]
    product = torch.einsum("ahij,bgjk->ahbgik", ov, right)  # (layers, heads, layers, heads, d_model, d_model)
    scores = product.norm(dim=(-2, -1)) / (ov.norm(dim=(-2, -1))[:, :, None, None] * right.norm(dim=(-2, -1)))
    layers = torch.arange(ov.shape[0])
    earlier = (layers[:, None] < layers[None, :])[:, None, :, None]  # (layers, 1, layers, 1): l1 < l2
    return torch.where(earlier, scores, torch.zeros_like(scores)).detach()


def random_composition_score(d_model: int, d_h: int, samples: int = 1000, seed: int = 0) -> float:
    """The mean :func:`composition_scores` of two random matrices shaped like a head's circuits, each a product of a
    ``(d_model, d_h)`` and a ``(d_h, d_model)`` Gaussian matrix: the baseline a score is read against."""
    for name, value in (("d_model", d_model), ("d_h", d_h), ("samples", samples)):
        require_positive_int(name, value)
    g = torch.Generator().manual_seed(seed)
    a, b, c, d = (torch.randn(samples, *shape, generator=g, dtype=torch.float64)
                  for shape in ((d_model, d_h), (d_h, d_model)) * 2)  # (samples, d_model, d_h), (samples, d_h, d_model)
    left, right = a @ b, c @ d  # (samples, d_model, d_model) each
    scores = (left @ right).norm(dim=(-2, -1)) / (left.norm(dim=(-2, -1)) * right.norm(dim=(-2, -1)))  # (samples,)
    return scores.mean().item()


def _circuits(attn) -> tuple[torch.Tensor, torch.Tensor]:
    """Each head's ``W_OV = W_V^T W_O^T`` and ``W_QK = W_Q^T W_K``, ``(heads, d_model, d_model)`` each, acting on
    row vectors; a key/value head shared by ``n_rep`` query heads (grouped-query attention) is used by each."""
    d_h, n = attn.d_h, attn.n_heads
    w_q = attn.w_q.weight.view(n, d_h, -1)  # (heads d_h, d_model) -> (heads, d_h, d_model)
    w_k, w_v = (w.weight.view(attn.n_kv_heads, d_h, -1).repeat_interleave(attn.n_rep, dim=0)
                for w in (attn.w_k, attn.w_v))  # (kv_heads d_h, d_model) -> (heads, d_h, d_model)
    w_o = attn.w_o.weight.view(-1, n, d_h).transpose(0, 1)  # (d_model, heads d_h) -> (heads, d_model, d_h)
    return w_v.transpose(1, 2) @ w_o.transpose(1, 2), w_q.transpose(1, 2) @ w_k  # (heads, d_model, d_model) each
