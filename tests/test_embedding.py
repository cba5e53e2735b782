"""Embeddings (chapter 2): one-hot times E, TokenEmbedding against nn.Embedding, and the lecture's RMS
argument for the initial scale, checked with hand-computed numbers."""

import math

import pytest
import torch
from torch import nn

import checks
from checks import CheckFailed
from transformer import OutputHead, TokenEmbedding, one_hot, rms


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------- one-hot times E


def test_one_hot_times_E_selects_rows_by_hand():
    # "thanks for all the" in a six-word vocabulary (all, fish, for, so, the, thanks), d = 3
    E = torch.tensor([[1.0, 0, 1], [0, 2, -1], [2, -1, 0], [-1, 1, 1], [0, 1, 2], [3, 0, -2]])
    w = torch.tensor([5, 2, 0, 4])
    by_hand = torch.tensor([[3.0, 0, -2], [2, -1, 0], [1, 0, 1], [0, 1, 2]])
    assert torch.equal(one_hot(w, 6) @ E, by_hand)


def test_one_hot_times_E_at_the_lecture_scale():
    # Jurafsky & Martin: "thanks for all the" -> ids [5, 4000, 10532, 2224] in a large vocabulary
    E = randn(32000, 4, seed=1)
    w = torch.tensor([5, 4000, 10532, 2224])
    X = one_hot(w, 32000)
    assert X.shape == (4, 32000) and X.sum().item() == 4
    assert torch.equal(X @ E, torch.stack([E[5], E[4000], E[10532], E[2224]]))


# ----------------------------------------------------------- TokenEmbedding vs nn.Embedding


@pytest.mark.parametrize("vocab_size,d_model", [(1, 1), (10, 4), (300, 64)])
def test_token_embedding_equals_nn_embedding(vocab_size, d_model):
    theirs = nn.Embedding(vocab_size, d_model)
    ours, plain = TokenEmbedding(vocab_size, d_model), TokenEmbedding(vocab_size, d_model, scale=False)
    with torch.no_grad():
        ours.weight.copy_(theirs.weight)
        plain.weight.copy_(theirs.weight)
    ids = torch.randint(0, vocab_size, (3, 7), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(plain(ids), theirs(ids), atol=0, rtol=0)
        torch.testing.assert_close(ours(ids), theirs(ids) * math.sqrt(d_model), atol=1e-6, rtol=1e-6)


def test_token_embedding_gradient_reaches_only_the_rows_used():
    emb = TokenEmbedding(10, 4)
    ids = torch.tensor([[5, 2, 0, 4], [3, 3, 2, 4]])
    emb(ids).sum().backward()
    used = torch.zeros(10, dtype=torch.bool)
    used[[0, 2, 3, 4, 5]] = True
    assert torch.equal(emb.weight.grad.abs().sum(dim=1) > 0, used)
    # token 3 appears twice, each time times sqrt(4) = 2: its row's gradient is 2 * 2 in every entry
    torch.testing.assert_close(emb.weight.grad[3], torch.full((4,), 4.0))


# ----------------------------------------------------------- the RMS argument (lecture 4)


def test_rms_by_hand():
    assert rms(torch.tensor([3.0, 4.0])).item() == pytest.approx(math.sqrt((9 + 16) / 2))
    torch.testing.assert_close(rms(torch.tensor([[1.0, -1.0], [2.0, 2.0]])), torch.tensor([1.0, 2.0]))


def test_rms_of_a_one_hot_vector_is_one_over_sqrt_vocab():
    # the lecture: "Input: RMS-norm = 1/sqrt(32,000)"
    assert rms(one_hot(torch.tensor(17), 32000)).item() == pytest.approx(1 / math.sqrt(32000), rel=1e-6)
    assert 1 / math.sqrt(32000) == pytest.approx(0.0055902, rel=1e-4)


def test_initial_entries_have_std_one_over_sqrt_d():
    torch.manual_seed(0)
    emb = TokenEmbedding(4000, 100)
    assert emb.weight.std().item() == pytest.approx(0.1, rel=0.02)
    assert abs(emb.weight.mean().item()) < 0.002


def test_scaled_lookup_and_tied_output_both_have_rms_one():
    # entries ~ 1/sqrt(d): the tied output layer gives scores of RMS 1 for inputs of RMS 1 (sum q_i^2 = 1),
    # and the lookup times sqrt(d) has RMS 1 (each row of E should have RMS 1)
    torch.manual_seed(1)
    d, vocab = 1000, 4000
    emb = TokenEmbedding(vocab, d)
    head = OutputHead(d, vocab, tie_to=emb)
    assert head.weight is emb.weight
    ids = torch.randint(0, vocab, (2, 8), generator=torch.Generator().manual_seed(3))
    h = randn(2, 8, d, seed=4)
    h = h / h.pow(2).mean(-1, keepdim=True).sqrt()  # RMS exactly 1
    with torch.no_grad():
        assert emb(ids).pow(2).mean().sqrt().item() == pytest.approx(1.0, rel=0.05)
        assert head(h).pow(2).mean().sqrt().item() == pytest.approx(1.0, rel=0.05)
    # the untied default of nn.Embedding, N(0, 1), gives scores of RMS about sqrt(d) = 31.6
    z = randn(vocab, d, seed=5)
    assert (h @ z.T).pow(2).mean().sqrt().item() == pytest.approx(math.sqrt(d), rel=0.05)


# ----------------------------------------------------------- the exercise checks accept hand-rounded answers


def test_rms_scales_check_accepts_the_numbers_worked_on_paper(capsys):
    checks.check_rms_scales([0.00559, 0.0316, 31.62])
    assert checks.PASSED in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="square root"):
        checks.check_rms_scales([1 / 32000, 0.0316, 31.62])


def test_one_hot_by_hand_check_takes_ints_floats_and_tensors(capsys):
    rows = [[1, -1, 4], [0, 3, 1], [0, 1, -2], [1, -1, 4]]
    checks.check_one_hot_by_hand(rows)
    checks.check_one_hot_by_hand(torch.tensor(rows, dtype=torch.float64))
    assert capsys.readouterr().out.count(checks.PASSED) == 2


def test_table_entries_check_accepts_the_lecture_table(capsys):
    # chapter 3: P[1, 0], P[2, 1], P[3, 2], P[4, 3] read off the lecture's table (Dim j+1, position pos)
    checks.check_table_entries([0.841, -0.416, 0.075, 0.995])
    assert checks.PASSED in capsys.readouterr().out
    with pytest.raises(CheckFailed):
        checks.check_table_entries([0.841, -0.416, 0.075, 0.995 - 2e-3])  # outside the stated 1e-3


def test_embedding_module_check_rejects_a_module_without_the_scale():
    class Unscaled(nn.Module):
        def __init__(self, vocab_size, d_model):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))

        def forward(self, ids):
            return self.weight[ids]

    with pytest.raises(CheckFailed, match=r"sqrt\(d_model\)"):
        checks.check_embedding_module(Unscaled)
    checks.check_embedding_module(lambda v, d: _Reference(v, d))


class _Reference(nn.Module):
    """An embedding written with nn.Embedding itself, as a student might."""

    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.table = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.table.weight, std=1 / math.sqrt(d_model))
        self.weight = self.table.weight
        self.d_model = d_model

    def forward(self, ids):
        return self.table(ids) * math.sqrt(self.d_model)
