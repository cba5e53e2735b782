"""Training with teacher forcing (chapters 7, 9 and 10).

:func:`train_step` is one optimizer step of a translator; :func:`fit` repeats
it with Adam and a short warm-up (:func:`warmup_factor`; the 2017 paper's schedule is
:func:`warmup_inverse_sqrt`), and calls back after every step (to show a
progress bar, say); :func:`translate`
and :func:`exact_match` measure what the translator learned. The loss
functions :func:`translation_loss`, :func:`next_token_loss` and
:func:`masked_token_loss` train the three kinds of model of chapters 10 and 11.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F

from ._validate import require_number, require_positive_int, require_rank
from .data import pad_batch
from .decoding import beam_decode, greedy_decode, refuses_max_len
from .progress import TrainingProgress


def teacher_forcing(tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split ``<sos> y1 .. yn <eos>`` into decoder input ``<sos> y1 .. yn`` and labels ``y1 .. yn <eos>``.

    ``tgt (batch, seq)`` -> two tensors ``(batch, seq - 1)``: position ``t`` reads
    tokens ``0..t`` and must predict token ``t + 1``.
    """
    require_rank("tgt", tgt, (2,), "(batch, seq)")
    if tgt.shape[1] < 2:
        raise ValueError(f"tgt: expected at least 2 tokens (<sos> and one more), got {tgt.shape[1]}")
    return tgt[:, :-1], tgt[:, 1:]


def sequence_loss(logits: torch.Tensor, labels: torch.Tensor, pad_id: int | None = 0,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy over the non-pad labels: ``logits (batch, seq, V)``, ``labels (batch, seq)``.

    With ``label_smoothing = eps`` the target puts ``1 - eps`` on the right
    token and spreads ``eps`` evenly over the whole vocabulary (chapter 10).
    """
    require_rank("logits", logits, (3,), "(batch, seq, vocab)")
    require_rank("labels", labels, (2,), "(batch, seq)")
    if logits.shape[:2] != labels.shape:
        raise ValueError(f"labels: expected shape {tuple(logits.shape[:2])} to match logits, got {tuple(labels.shape)}")
    _check_smoothing(label_smoothing)
    ignore = -100 if pad_id is None else pad_id
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=ignore,  # (batch * seq, V)
                           label_smoothing=label_smoothing)


def translation_loss(model, batch: tuple[torch.Tensor, torch.Tensor], pad_id: int = 0,
                     label_smoothing: float = 0.0) -> torch.Tensor:
    """Teacher-forced loss of an encoder-decoder on ``batch = (src (batch, T_e), tgt (batch, T_d))``."""
    src, tgt = batch
    dec_in, labels = teacher_forcing(tgt)
    return sequence_loss(model(src, dec_in), labels, pad_id, label_smoothing)


def next_token_loss(model, ids: torch.Tensor, pad_id: int = 0, label_smoothing: float = 0.0) -> torch.Tensor:
    """Loss of a decoder-only model on ``ids (batch, seq)``: every position predicts the token after it."""
    inputs, labels = teacher_forcing(ids)
    return sequence_loss(model(inputs), labels, pad_id, label_smoothing)


def masked_token_loss(model, batch: tuple[torch.Tensor, torch.Tensor], pad_id: int = 0,
                      label_smoothing: float = 0.0) -> torch.Tensor:
    """Loss of an encoder-only model on ``batch = (masked ids, labels)``, both ``(batch, seq)``.

    Every label equal to ``pad_id`` is left out of the mean: ``labels`` hold the original token at the
    masked positions and ``pad_id`` everywhere else, so only the blanks count.
    :func:`transformer.pretraining.masked_lm_loss` is this loss with its ``ignore_index`` in place of ``pad_id``.
    """
    masked, labels = batch
    return sequence_loss(model(masked), labels, pad_id, label_smoothing)


def train_step(model, optimizer, src: torch.Tensor, tgt: torch.Tensor, pad_id: int = 0,
               label_smoothing: float = 0.0) -> float:
    """One optimizer step of an encoder-decoder with teacher forcing; returns the loss."""
    model.train()
    loss = translation_loss(model, (src, tgt), pad_id, label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


def warmup_factor(step: int, warmup: int) -> float:
    """The learning rate grows linearly over the first ``warmup`` steps, then stays: ``min(1, step / warmup)``."""
    return 1.0 if warmup <= 0 else min(1.0, step / warmup)


def warmup_inverse_sqrt(step: int, d_model: int, warmup: int = 4000) -> float:
    """The 2017 paper's learning rate at ``step`` (from 1): ``d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)``.

    Vaswani et al., section 5.3, equation 3 (chapter 10): linear growth for ``warmup`` steps up to
    ``(d_model * warmup)**-0.5`` at ``step == warmup``, then decay as ``1 / sqrt(step)``. All three are
    positive ints; the result is a float. With PyTorch, set the optimizer's ``lr`` to 1 and use
    ``LambdaLR(optimizer, lambda i: warmup_inverse_sqrt(i + 1, d_model, warmup))`` (``LambdaLR`` counts from 0).
    """
    for name, value in (("step", step), ("d_model", d_model), ("warmup", warmup)):
        require_positive_int(name, value)
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def fit(model, batches: Iterator, steps: int, loss_fn: Callable | None = None, lr: float = 1e-3,
        warmup: int = 100, label_smoothing: float = 0.0, pad_id: int = 0, clip: float | None = 1.0,
        progress: bool = False, description: str = "training",
        callback: Callable[[int, float], None] | None = None) -> list[float]:
    """Train ``model`` for ``steps`` batches drawn from ``batches``; returns the loss of every step (chapter 10).

    ``loss_fn(model, batch) -> loss`` defaults to :func:`translation_loss`
    (batches ``(src, tgt)``, teacher forcing). The optimizer is Adam with the
    2017 paper's ``betas = (0.9, 0.98)`` and ``eps = 1e-9``; the learning rate
    warms up linearly for ``warmup`` steps; gradients are clipped to norm
    ``clip``. After every step, ``callback(step, loss)`` is called with the
    step (from 1) and its loss. ``progress=True`` displays a
    :class:`~transformer.progress.TrainingProgress` bar named ``description``
    and calls it back too. The model is left in eval mode.
    """
    require_positive_int("steps", steps)
    _check_smoothing(label_smoothing)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback: expected a function callback(step, loss), got {type(callback).__name__}")
    if loss_fn is None:
        def loss_fn(m, batch):
            return translation_loss(m, batch, pad_id, label_smoothing)
    callbacks = [] if callback is None else [callback]
    if progress:
        from IPython.display import display

        bar = TrainingProgress(steps, description)
        display(bar.widget)
        callbacks.append(bar)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    losses = []
    model.train()
    for step in range(1, steps + 1):
        for group in optimizer.param_groups:
            group["lr"] = lr * warmup_factor(step, warmup)
        loss = loss_fn(model, next(batches))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
        for call_back in callbacks:
            call_back(step, losses[-1])
    model.eval()
    return losses


@refuses_max_len
@torch.no_grad()
def translate(model, corpus, sentences: Sequence[str], max_new_tokens: int = 12, beam_size: int = 1,
              alpha: float = 1.0) -> list[str]:
    """Translations of English ``sentences`` with a trained :class:`~transformer.model.EncoderDecoder`:
    greedy (``beam_size=1``, the whole batch at once) or by beam search (one sentence at a time), each at most
    ``max_new_tokens`` tokens long (its old name ``max_len`` gets an error that says so).

    ``corpus`` is a :class:`transformer.data.Corpus` (its tokenizers turn words into ids and back).
    """
    vocab = corpus.tgt.vocab
    if beam_size == 1:
        out = greedy_decode(model, corpus.encode_src(sentences), max_new_tokens, vocab.sos_id, vocab.eos_id)
        return corpus.decode_tgt(out[:, 1:])  # drop <sos>
    ids = [beam_decode(model, corpus.encode_src([s]), beam_size, max_new_tokens, vocab.sos_id, vocab.eos_id, alpha)
           for s in sentences]
    return corpus.decode_tgt(pad_batch([row[1:] for row in ids], corpus.pad_id))  # drop <sos>


def exact_match(model, corpus, pairs: Sequence[tuple[str, str]], batch_size: int = 256) -> float:
    """The fraction of ``(english, german)`` pairs whose greedy translation equals the German exactly."""
    right = 0
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i: i + batch_size]
        got = translate(model, corpus, [en for en, _ in chunk])
        right += sum(g == de for g, (_, de) in zip(got, chunk))
    return right / len(pairs)


# ----------------------------------------------------------------------------- argument checks

def _check_smoothing(label_smoothing: float) -> None:
    require_number("label_smoothing", label_smoothing, 0, 1, open_high=True)
