"""The known mistakes of the exercises of chapter 10, as data.

Each :class:`~checks.core.Mistake` is a named wrong answer in the form the student gives:
a function or a class with the exercise's signature (most written as the right answer with one step
changed). :mod:`checks.a10` runs them on its inputs and names the one a wrong answer equals.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from transformer.blocks import Decoder, Encoder
from transformer.config import TransformerConfig
from transformer.embedding import TokenEmbedding
from transformer.heads import OutputHead
from transformer.masks import causal_mask, padding_mask
from transformer.positional import SinusoidalPositionalEncoding

from ..core import Mistake


class TrainStep:
    """One teacher-forced step done right, ``step(model, optimizer, src, tgt, pad_id, label_smoothing) -> float``;
    each known mistake below changes one part of it."""

    def labels(self, tgt: torch.Tensor) -> torch.Tensor:
        return tgt[:, 1:]

    def loss(self, logits: torch.Tensor, labels: torch.Tensor, pad_id: int, label_smoothing: float) -> torch.Tensor:
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=pad_id,  # (batch * seq, vocab)
                               label_smoothing=label_smoothing)

    def zero_grad(self, optimizer) -> None:
        optimizer.zero_grad()

    def step(self, optimizer) -> None:
        optimizer.step()

    def __call__(self, model, optimizer, src, tgt, pad_id=0, label_smoothing=0.0) -> float:
        model.train()
        logits = model(src, tgt[:, :-1])  # (batch, seq - 1, vocab)
        loss = self.loss(logits, self.labels(tgt), pad_id, label_smoothing)
        self.zero_grad(optimizer)
        loss.backward()
        self.step(optimizer)
        return loss.item()


class _LabelsNotShifted(TrainStep):
    def labels(self, tgt):
        return tgt[:, :-1]


class _PaddingCounted(TrainStep):
    def loss(self, logits, labels, pad_id, label_smoothing):
        return super().loss(logits, labels, -100, label_smoothing)


class _NoSmoothing(TrainStep):
    def loss(self, logits, labels, pad_id, label_smoothing):
        return super().loss(logits, labels, pad_id, 0.0)


class _NoZeroGrad(TrainStep):
    def zero_grad(self, optimizer):
        pass


class _NoStep(TrainStep):
    def step(self, optimizer):
        pass


class _Summed(TrainStep):
    def loss(self, logits, labels, pad_id, label_smoothing):
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=pad_id,
                               label_smoothing=label_smoothing, reduction="sum")


class _BatchChanged(TrainStep):
    def labels(self, tgt):
        labels = tgt[:, 1:]             # a view of tgt
        labels[labels == 0] = -100      # writes into tgt itself
        return labels

    def loss(self, logits, labels, pad_id, label_smoothing):
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100,
                               label_smoothing=label_smoothing)


CHANGED_BATCH_HINT = ("a slice such as tgt[:, 1:] is a view that shares tgt's memory: writing into it (labels[...] = "
                      "..., +=) changes tgt too, and the next epoch trains on a broken batch. Only read the batch: "
                      "ignore_index=pad_id skips the padding without changing the labels.")

TRAIN_STEP_MISTAKES = [
    Mistake("labels not shifted", "the labels must be the decoder input shifted by one: input tgt[:, :-1], labels "
            "tgt[:, 1:].", _LabelsNotShifted()),
    Mistake("padding counted", "the padding is counted in the loss: pass ignore_index=pad_id to the cross-entropy.",
            _PaddingCounted()),
    Mistake("no smoothing", "label_smoothing is ignored: pass it to the cross-entropy.", _NoSmoothing()),
    Mistake("no zero_grad", "gradients pile up from step to step: call optimizer.zero_grad() before loss.backward().",
            _NoZeroGrad()),
    Mistake("no step", "the parameters never change: call optimizer.step() after loss.backward().", _NoStep()),
    Mistake("summed", "the loss is summed over the tokens; take the mean (the default of F.cross_entropy).", _Summed()),
    Mistake("batch changed in place", CHANGED_BATCH_HINT, _BatchChanged()),
]


class _Translator(nn.Module):
    """The exercise's translator done right, from the package's parts; each known mistake below changes one step."""

    scaled = True  # TokenEmbedding multiplies by sqrt(d_model)

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.pad_id = cfg.pad_id
        self.src_embed = TokenEmbedding(cfg.src_vocab_size or cfg.vocab_size, cfg.d_model, scale=self.scaled)
        self.tgt_embed = TokenEmbedding(cfg.vocab_size, cfg.d_model, scale=self.scaled)
        self.positions = SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.head = OutputHead(cfg.d_model, cfg.vocab_size, tie_to=self.tgt_embed)

    def source(self, src):
        return self.positions(self.src_embed(src))  # (batch, T_e, d_model)

    def target(self, tgt):
        return self.positions(self.tgt_embed(tgt))  # (batch, T_d, d_model)

    def masks(self, src, tgt):
        """The encoder's mask, the cross-attention's, and the decoder's self-attention's."""
        src_mask = padding_mask(src, self.pad_id)  # (batch, 1, T_e)
        tgt_mask = causal_mask(tgt.shape[1]) & padding_mask(tgt, self.pad_id)  # (batch, T_d, T_d)
        return src_mask, src_mask, tgt_mask

    def forward(self, src, tgt):
        encoder_mask, memory_mask, tgt_mask = self.masks(src, tgt)
        memory = self.encoder(self.source(src), encoder_mask)  # (batch, T_e, d_model)
        return self.head(self.decoder(self.target(tgt), memory, tgt_mask, memory_mask))  # (batch, T_d, vocab)


class _NotCausal(_Translator):
    def masks(self, src, tgt):
        src_mask = padding_mask(src, self.pad_id)
        return src_mask, src_mask, padding_mask(tgt, self.pad_id)


class _EncoderSeesPadding(_Translator):
    def masks(self, src, tgt):
        _, memory_mask, tgt_mask = super().masks(src, tgt)
        return None, memory_mask, tgt_mask


class _CrossAttentionSeesPadding(_Translator):
    def masks(self, src, tgt):
        encoder_mask, _, tgt_mask = super().masks(src, tgt)
        return encoder_mask, None, tgt_mask


class _NoSourcePadding(_Translator):
    def masks(self, src, tgt):
        return None, None, super().masks(src, tgt)[2]


class _NoTargetPadding(_Translator):
    def masks(self, src, tgt):
        encoder_mask, memory_mask, _ = super().masks(src, tgt)
        return encoder_mask, memory_mask, causal_mask(tgt.shape[1])


class _NoPositions(_Translator):
    def source(self, src):
        return self.src_embed(src)

    def target(self, tgt):
        return self.tgt_embed(tgt)


class _SourcePositionsOnly(_Translator):
    def target(self, tgt):
        return self.tgt_embed(tgt)


class _TargetPositionsOnly(_Translator):
    def source(self, src):
        return self.src_embed(src)


class _NotScaled(_Translator):
    scaled = False


TRANSLATOR_MISTAKES = [
    Mistake("not causal", "the decoder sees the future: its self-attention needs causal_mask(T_d) (combined with the "
            "padding mask of tgt by &).", _NotCausal),
    Mistake("encoder sees padding", "the encoder attends to padding: pass padding_mask(src, pad_id) to the encoder.",
            _EncoderSeesPadding),
    Mistake("cross-attention sees padding", "the cross-attention attends to the source's padding: pass the source's "
            "padding mask to the decoder as well (its memory_mask).", _CrossAttentionSeesPadding),
    Mistake("no source padding", "padding of the source is ignored everywhere: build padding_mask(src, pad_id) and "
            "pass it to the encoder and to the decoder's cross-attention.", _NoSourcePadding),
    Mistake("no target padding", "the decoder's self-attention also needs the target's padding mask: "
            "causal_mask(T_d) & padding_mask(tgt, pad_id).", _NoTargetPadding),
    Mistake("no positions", "no positional encoding: add self.positions to both embedded sequences.", _NoPositions),
    Mistake("source positions only", "only the source gets positional encodings; the target needs them too.",
            _SourcePositionsOnly),
    Mistake("target positions only", "only the target gets positional encodings; the source needs them too.",
            _TargetPositionsOnly),
    Mistake("not scaled", "the embeddings are not scaled by sqrt(d_model): use TokenEmbedding's default scale=True.",
            _NotScaled),
]
