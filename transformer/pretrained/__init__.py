"""A tiny trained model to look inside (chapters 2 to 5 and 7).

The chapters build embeddings, positions and attention on random weights;
here is one small model trained once, on the generated English of
:mod:`transformer.pretrained.grammar`, whose weights ship with the package::

    model, tokenizer = tiny_lm()
    ids = encode(tokenizer, ["the animal didn't cross the street because it was too tired"])  # (1, 15)
    weights = attention_weights(model, ids)  # {"encoder.layers.0.self_attn": (1, 4, 15, 15), ...}

It is an :class:`~transformer.model.EncoderOnly` model (BERT-like: every
position sees the whole sentence) with learned positions and unscaled
embeddings (``scale_embeddings=False``), trained on three exercises at once
(``tools/train_tiny_lm.py``): fill in hidden words (``<mask>``); restore the
number-agreeing words (it/they, was/were, is/are), which are flipped in half
the sentences and always asked for, so that the model must find the pronoun's
referent; and read sentences in which two neighbouring words were swapped (30 %).
``tokenizer`` is a
:class:`~transformer.tokenization.WordTokenizer` whose vocabulary ends its
special tokens with ``<mask>``. ``tiny_lm("causal")`` gives the same weights
in a :class:`~transformer.model.DecoderOnly` model: every position sees only
its past (chapter 7). :func:`info` is what training recorded (config,
vocabulary, curve, losses, the heads it found); ``make pretrained`` trains it again.

What it learned (measured in ``tests/test_pretrained.py``): nouns of one class
have nearby embeddings; head 0 of layer 0 takes a pronoun to the adjective at
the end, and heads 2 and 3 of layer 1 from the pronoun to its referent (``info()["heads"]``,
:mod:`transformer.pretrained.probes`); blocking only the pronoun's key to the
adjective in both layers leaves the referent to chance (chapter 7).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import torch

from .._validate import require_choice
from ..config import TransformerConfig
from ..data import maskable, pad_batch
from ..model import DecoderOnly, EncoderOnly
from ..modes import eval_mode
from ..pretraining import IGNORE_INDEX, masked_lm_loss
from ..tokenization import SPECIAL_TOKENS, Vocabulary, WordTokenizer

HERE = Path(__file__).parent
WEIGHTS, INFO = HERE / "tiny_lm.pt", HERE / "tiny_lm.json"
MASK = "<mask>"
SPECIALS = (*SPECIAL_TOKENS, MASK)
KINDS = ("encoder", "causal")


@cache
def info() -> dict:
    """What training recorded, read once from ``tiny_lm.json`` and shared: read it, do not modify it."""
    return json.loads(INFO.read_text())


def tokenizer_for(vocabulary: list[str]) -> WordTokenizer:
    """The word tokenizer of the list ``vocabulary`` (id order): the special tokens first, ``<mask>`` last of them."""
    if tuple(vocabulary[: len(SPECIALS)]) != SPECIALS:
        raise ValueError(f"vocabulary: expected it to start with {list(SPECIALS)}, got {vocabulary[:len(SPECIALS)]}")
    return WordTokenizer(Vocabulary(vocabulary[len(SPECIALS):], SPECIALS))


def tiny_lm(kind: str = "encoder") -> tuple[EncoderOnly | DecoderOnly, WordTokenizer]:
    """``(model, tokenizer)``: the trained model in eval mode and its word tokenizer.

    ``kind="encoder"``: the model as trained, an :class:`EncoderOnly` (each
    position sees every position). ``kind="causal"``: the same weights in a
    :class:`DecoderOnly`, whose causal mask hides every later position.
    Each call builds a new model; change it freely.
    """
    require_choice("kind", kind, KINDS)
    meta = info()
    cfg = TransformerConfig(**meta["config"])
    state = torch.load(WEIGHTS, weights_only=True)  # the trained EncoderOnly's state_dict
    if kind == "encoder":
        model = EncoderOnly(cfg)
    else:  # a DecoderOnly names its stack `causal_stack`; the blocks and their weights are the same
        model = DecoderOnly(cfg)
        state = {("causal_stack." + k[len("encoder."):] if k.startswith("encoder.") else k): v
                 for k, v in state.items()}
    model.load_state_dict(state)
    return model.eval(), tokenizer_for(meta["vocabulary"])


def encode(tokenizer: WordTokenizer, sentences: list[str]) -> torch.Tensor:
    """Sentences -> ids ``(batch, longest)``: ``<sos> words <eos>``, padded on the right with ``<pad>``."""
    if isinstance(sentences, str):
        raise TypeError("sentences: expected a list of strings, got a single str; wrap it in a list")
    return pad_batch([tokenizer.encode(s) for s in sentences], tokenizer.vocab.pad_id)


def blanks(ids: torch.Tensor, mask_id: int, n_specials: int = len(SPECIALS)) -> tuple[torch.Tensor, torch.Tensor]:
    """Every word hidden in turn: ``ids (batch, seq)`` -> ``(masked, labels)``, both ``(n_words, seq)``.

    Row ``k`` is the sentence of the ``k``-th word with that one word replaced
    by ``mask_id``; ``labels`` holds the word there and ``-100`` (ignored) elsewhere.
    Words are the ids from ``n_specials`` on (the special tokens come first).
    """
    rows, cols = torch.nonzero(maskable(ids, range(n_specials)), as_tuple=True)  # (n_words,) each
    masked = ids[rows].clone()  # (n_words, seq)
    labels = torch.full_like(masked, IGNORE_INDEX)
    here = torch.arange(len(rows))
    labels[here, cols] = masked[here, cols]
    masked[here, cols] = mask_id
    return masked, labels


def blank_loss(model: EncoderOnly, tokenizer: WordTokenizer, sentences: list[str], chunk: int = 2048) -> float:
    """Mean cross-entropy (nats) of filling in each word of ``sentences``, one hidden word at a time."""
    masked, labels = blanks(encode(tokenizer, sentences), tokenizer.vocab.id_of(MASK))
    total = 0.0
    with eval_mode(model):
        for i in range(0, len(masked), chunk):
            rows = (masked[i:i + chunk], labels[i:i + chunk])  # one blank per row: the mean over the rows' blanks
            total += masked_lm_loss(model, rows).item() * len(rows[0])
    return total / len(masked)
