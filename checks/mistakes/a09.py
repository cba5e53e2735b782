"""The known mistakes of the exercises of chapter 9, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a09` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..core import Mistake


def _nll(logits, labels, dim=-1):
    """``-log p(label)`` at every position, ``(batch, seq)``, with the log-softmax over ``dim``."""
    return -logits.log_softmax(dim=dim).gather(-1, labels[..., None])[..., 0]


MASKED_CROSS_ENTROPY_MISTAKES = [
    Mistake("padding counted", "the padding is counted: positions whose label is pad_id must be left out.",
            lambda logits, labels, pad_id: _nll(logits, labels).mean()),
    Mistake("divided by every position", "divided by every position (batch x T), not by the number of real labels.",
            lambda logits, labels, pad_id: _nll(logits, labels)[labels != pad_id].sum() / labels.numel()),
    Mistake("summed", "this is the sum over the real labels; the loss is their mean.",
            lambda logits, labels, pad_id: _nll(logits, labels)[labels != pad_id].sum()),
    Mistake("no minus", "the minus sign is missing: the loss is -log p.",
            lambda logits, labels, pad_id: -_nll(logits, labels)[labels != pad_id].mean()),
    Mistake("log-softmax over the positions", "the log-softmax runs over the wrong dimension: each position's "
            "probabilities are over the vocabulary, the last dimension.",
            lambda logits, labels, pad_id: _nll(logits, labels, dim=1)[labels != pad_id].mean()),
    Mistake("logits as log-probabilities", "the logits were used as log-probabilities: apply log_softmax over the "
            "vocabulary first.",
            lambda logits, labels, pad_id: -logits.gather(-1, labels[..., None])[..., 0][labels != pad_id].mean()),
    Mistake("pad_id 0", "pad_id is hard-coded as 0: leave out the labels equal to the pad_id argument.",
            lambda logits, labels, pad_id: _nll(logits, labels)[labels != 0].mean()),
    Mistake("mean per sentence", "this is the mean of each sentence's mean: a sentence of 3 real labels then weighs "
            "as much as one of 30. The loss averages over tokens: every real label of the batch counts once.",
            lambda logits, labels, pad_id: ((_nll(logits, labels) * (labels != pad_id)).sum(1)
                                            / (labels != pad_id).sum(1)).mean()),
    Mistake("softmax for log_softmax", "-p(label) is not the cross-entropy: the loss is -log p(label), which grows "
            "without bound as p goes to 0. log_softmax gives log p directly (and more accurately than "
            "softmax().log()).",
            lambda logits, labels, pad_id: -logits.softmax(-1).gather(-1, labels[..., None])[..., 0][labels != pad_id]
            .mean()),
]


class Greedy:
    """Greedy decoding done right, ``greedy(next_logits, prefix, eos_id, max_new_tokens)``; each known mistake
    below changes one step."""

    def budget(self, prefix, max_new_tokens: int) -> int:
        return max_new_tokens

    def read(self, ids: list[int], prefix) -> list[int]:
        return ids  # the whole sequence so far

    def pick(self, logits: torch.Tensor) -> int:
        return int(logits.argmax())

    def finish(self, ids: list[int], prefix, nxt: int, eos_id: int) -> bool:
        """Append ``nxt`` (or not) and say whether to stop."""
        ids.append(nxt)
        return nxt == eos_id

    def result(self, ids: list[int], prefix) -> list[int]:
        return ids

    def __call__(self, next_logits, prefix, eos_id: int, max_new_tokens: int) -> list[int]:
        ids = list(prefix)
        for _ in range(max(self.budget(prefix, max_new_tokens), 0)):
            if self.finish(ids, prefix, self.pick(next_logits(self.read(ids, prefix))), eos_id):
                break
        return self.result(ids, prefix)


class _NoStop(Greedy):
    def finish(self, ids, prefix, nxt, eos_id):
        ids.append(nxt)
        return False


class _NoEos(Greedy):
    def finish(self, ids, prefix, nxt, eos_id):
        if nxt == eos_id:
            return True
        ids.append(nxt)
        return False


class _OneShort(Greedy):
    def budget(self, prefix, max_new_tokens):
        return max_new_tokens - 1


class _OneLong(Greedy):
    def budget(self, prefix, max_new_tokens):
        return max_new_tokens + 1


class _CountsThePrefix(Greedy):
    def budget(self, prefix, max_new_tokens):
        return max_new_tokens - len(prefix)


class _NoFeedback(Greedy):
    def read(self, ids, prefix):
        return list(prefix)


class _LastTokenOnly(Greedy):
    def read(self, ids, prefix):
        return ids[-1:]


class _NoPrefix(Greedy):
    def result(self, ids, prefix):
        return ids[len(prefix):]


class _Argmin(Greedy):
    def pick(self, logits):
        return int(logits.argmin())


GREEDY_MISTAKES = [
    Mistake("no stop", "it goes on after eos_id: stop as soon as eos_id has been appended.", _NoStop()),
    Mistake("no eos", "eos_id is missing at the end: append it, then stop.", _NoEos()),
    Mistake("one short", "one token too few: max_new_tokens new tokens may be generated.", _OneShort()),
    Mistake("one long", "one token too many: at most max_new_tokens new tokens.", _OneLong()),
    Mistake("counts the prefix", "max_new_tokens counts only the new tokens, not the prefix.", _CountsThePrefix()),
    Mistake("no feedback", "every step reads the same prefix: feed the growing sequence (prefix + new tokens) back "
            "in.", _NoFeedback()),
    Mistake("last token only", "next_logits needs the whole sequence so far, not only its last token.",
            _LastTokenOnly()),
    Mistake("no prefix", "return the prefix followed by the new tokens, not only the new tokens.", _NoPrefix()),
    Mistake("argmin", "greedy decoding takes the largest logit (argmax), not the smallest.", _Argmin()),
]


class _OutputHead(nn.Module):
    """The exercise's head done right: ``self.weight (vocab, d_model)``, the embedding's own when tied; each known
    mistake below changes what ``forward`` makes of the logits ``h W^T``."""

    def __init__(self, d_model: int, vocab_size: int, embedding: nn.Embedding | None = None):
        super().__init__()
        if embedding is not None:
            self.weight = embedding.weight
        else:
            self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))
        self.d_model = d_model

    def finish(self, logits: torch.Tensor) -> torch.Tensor:
        return logits

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.finish(F.linear(h, self.weight))  # (batch, seq, d_model) -> (batch, seq, vocab)


class _Probabilities(_OutputHead):
    def finish(self, logits):
        return logits.softmax(dim=-1)


class _LogProbabilities(_OutputHead):
    def finish(self, logits):
        return logits.log_softmax(dim=-1)


class _TimesSqrtD(_OutputHead):
    def finish(self, logits):
        return logits * math.sqrt(self.d_model)


class _DividedBySqrtD(_OutputHead):
    def finish(self, logits):
        return logits / math.sqrt(self.d_model)


OUTPUT_HEAD_MISTAKES = [
    Mistake("probabilities", "forward returned probabilities; it must return the logits (the softmax comes later, in "
            "the loss or when decoding).", _Probabilities),
    Mistake("log-probabilities", "forward returned log-probabilities; it must return the logits.", _LogProbabilities),
    Mistake("times sqrt(d_model)", "the logits are multiplied by sqrt(d_model): that factor belongs to the input "
            "embedding, not to the output head.", _TimesSqrtD),
    Mistake("divided by sqrt(d_model)", "the logits are divided by sqrt(d_model); the head computes plain h W^T.",
            _DividedBySqrtD),
]
