"""BERT's masking (chapter 11): over a large seeded batch, 15% of the ordinary tokens are chosen and of those
80% become [MASK], 10% a random ordinary token and 10% stay, within binomial bounds; special tokens and
padding are never chosen; labels are set exactly at the chosen positions."""

from __future__ import annotations

import math

import pytest
import torch

from transformer import EncoderOnly, TransformerConfig
from transformer.pretraining import IGNORE_INDEX, mask_tokens, masked_lm_loss, ordinary_ids, replace_chosen

PAD, CLS, SEP, MASK = 0, 1, 2, 3
SPECIAL = [PAD, CLS, SEP]
VOCAB = 40


def batch(seed: int = 0, rows: int = 4000, seq: int = 24) -> torch.Tensor:
    """``[CLS] words [SEP] [PAD] ...`` rows of random lengths: ``(rows, seq)``."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, VOCAB, (rows, seq), generator=g)
    lengths = torch.randint(3, seq - 1, (rows,), generator=g)
    pos = torch.arange(seq)[None]  # (1, seq)
    ids = torch.where(pos == 0, CLS, ids)
    ids = torch.where(pos == lengths[:, None] + 1, SEP, ids)
    return torch.where(pos > lengths[:, None] + 1, PAD, ids)


def within(count: int, n: int, prob: float, sigmas: float = 5.0) -> bool:
    return abs(count - n * prob) <= sigmas * math.sqrt(n * prob * (1 - prob))


@pytest.fixture(scope="module")
def masked():
    ids = batch()
    inputs, labels = mask_tokens(ids, MASK, VOCAB, 0.15, torch.Generator().manual_seed(1), SPECIAL)
    return ids, inputs, labels


def test_fifteen_percent_of_the_ordinary_tokens_are_chosen(masked):
    ids, _, labels = masked
    ordinary = ids >= 4
    chosen = labels != IGNORE_INDEX
    assert within(int(chosen.sum()), int(ordinary.sum()), 0.15)


def test_special_tokens_and_padding_are_never_chosen(masked):
    ids, inputs, labels = masked
    special = torch.isin(ids, torch.tensor(SPECIAL))
    assert (labels[special] == IGNORE_INDEX).all()
    assert torch.equal(inputs[special], ids[special])  # and never replaced


def test_labels_hold_the_original_token_exactly_where_chosen(masked):
    ids, inputs, labels = masked
    chosen = labels != IGNORE_INDEX
    assert torch.equal(labels[chosen], ids[chosen])
    assert torch.equal(inputs[~chosen], ids[~chosen])  # what is not chosen is left alone


def test_of_the_chosen_80_percent_mask_10_random_10_unchanged(masked):
    ids, inputs, labels = masked
    chosen = labels != IGNORE_INDEX
    n = int(chosen.sum())
    became_mask = int((inputs[chosen] == MASK).sum())
    unchanged = int((inputs[chosen] == ids[chosen]).sum())
    other = n - became_mask - unchanged
    # a random replacement equals the original with probability 1 / 36 (36 ordinary tokens)
    n_ordinary = VOCAB - 4
    assert within(became_mask, n, 0.8)
    assert within(unchanged, n, 0.1 + 0.1 / n_ordinary)
    assert within(other, n, 0.1 * (1 - 1 / n_ordinary))


def test_random_replacements_are_ordinary_tokens_drawn_uniformly(masked):
    ids, inputs, labels = masked
    replaced = (labels != IGNORE_INDEX) & (inputs != MASK) & (inputs != ids)
    drawn = inputs[replaced]
    assert (drawn >= 4).all(), "a random replacement must never be a special token or [MASK]"
    counts = torch.bincount(drawn - 4, minlength=VOCAB - 4).double()
    expected = counts.sum() / (VOCAB - 4)
    chi2 = ((counts - expected) ** 2 / expected).sum().item()
    df = VOCAB - 5
    assert chi2 <= df + 5 * math.sqrt(2 * df)


def test_p_is_the_share_chosen_and_the_generator_repeats_it():
    ids = batch(2, rows=2000)
    for p in (0.0, 0.3, 1.0):
        _, labels = mask_tokens(ids, MASK, VOCAB, p, torch.Generator().manual_seed(0), SPECIAL)
        chosen, ordinary = int((labels != IGNORE_INDEX).sum()), int((ids >= 4).sum())
        assert chosen == 0 if p == 0 else chosen == ordinary if p == 1 else within(chosen, ordinary, p)
    a = mask_tokens(ids, MASK, VOCAB, generator=torch.Generator().manual_seed(5), special_ids=SPECIAL)
    b = mask_tokens(ids, MASK, VOCAB, generator=torch.Generator().manual_seed(5), special_ids=SPECIAL)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_a_mask_token_already_in_the_input_is_special():
    ids = torch.full((50, 10), MASK)
    ids[:, ::2] = 7
    inputs, labels = mask_tokens(ids, MASK, VOCAB, 1.0, torch.Generator().manual_seed(0), SPECIAL)
    assert (labels[:, 1::2] == IGNORE_INDEX).all() and (labels[:, ::2] == 7).all()
    assert sorted(ordinary_ids(8, [0, 3, 5]).tolist()) == [1, 2, 4, 6, 7]


def test_masked_lm_loss_counts_only_the_chosen_positions():
    cfg = TransformerConfig(vocab_size=VOCAB, d_model=16, n_heads=2, d_ff=32, n_layers=1, dropout=0.0, max_len=24,
                            pad_id=PAD)
    model = EncoderOnly(cfg).eval()
    ids = batch(3, rows=8)
    inputs, labels = mask_tokens(ids, MASK, VOCAB, 0.3, torch.Generator().manual_seed(0), SPECIAL)
    with torch.no_grad():
        logits = model(inputs)
        chosen = labels != IGNORE_INDEX
        by_hand = -logits.log_softmax(-1)[chosen].gather(-1, labels[chosen][:, None]).mean()
        torch.testing.assert_close(masked_lm_loss(model, (inputs, labels)), by_hand)


def test_invalid_arguments_name_what_was_expected():
    ids = batch(rows=2)
    with pytest.raises(ValueError, match=r"ids: expected token ids in \[0, 9\], got values in \[0, 39\]"):
        mask_tokens(ids, MASK, 10)
    with pytest.raises(TypeError, match="ids: expected an integer tensor"):
        mask_tokens(ids.float(), MASK, VOCAB)
    with pytest.raises(ValueError, match=r"p: expected a probability in \[0, 1\], got 1.5"):
        mask_tokens(ids, MASK, VOCAB, p=1.5)
    with pytest.raises(ValueError, match=r"mask_id: expected a token id in \[0, 39\], got 40"):
        mask_tokens(ids, 40, VOCAB)
    with pytest.raises(TypeError, match="special_ids: expected a list of token ids, got 0"):
        mask_tokens(ids, MASK, VOCAB, special_ids=0)
    with pytest.raises(ValueError, match=r"ids: expected 2 dimensions \(batch, seq\)"):
        mask_tokens(ids[0], MASK, VOCAB)


def test_replace_chosen_is_the_80_10_10_rule_on_given_draws():
    """Written out by hand: a chosen token with action 0.1 is masked, 0.85 random, 0.95 kept; unchosen stay."""
    ids = torch.tensor([[10, 11, 12, 13, 14]])
    chosen = torch.tensor([[True, True, True, False, False]])
    action = torch.tensor([[0.1, 0.85, 0.95, 0.1, 0.85]])
    random_ids = torch.tensor([[20, 21, 22, 23, 24]])
    assert replace_chosen(ids, chosen, action, random_ids, mask_id=3).tolist() == [[3, 21, 12, 13, 14]]
