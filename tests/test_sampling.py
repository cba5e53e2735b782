"""Top-k, top-p (nucleus) and temperature sampling (chapter 11): the kept set on known distributions, the
renormalisation, Hugging Face's warpers as an independent reference, and the frequencies of many seeded draws."""

from __future__ import annotations

import math

import pytest
import torch

from transformer.sampling import sample_next, sampling_distribution, top_k_filter, top_p_filter

# A known distribution, most likely first after the largest: probabilities 0.5, 0.2, 0.15, 0.1, 0.05.
PROBS = torch.tensor([0.2, 0.5, 0.05, 0.15, 0.1])
LOGITS = PROBS.log()
INF = float("-inf")


def kept(filtered: torch.Tensor) -> set[int]:
    return set(torch.isfinite(filtered).nonzero().flatten().tolist())


@pytest.mark.parametrize("k, expected", [(1, {1}), (2, {0, 1}), (3, {0, 1, 3}), (4, {0, 1, 3, 4}),
                                         (5, {0, 1, 2, 3, 4}), (9, {0, 1, 2, 3, 4})])
def test_top_k_keeps_exactly_the_k_largest(k, expected):
    out = top_k_filter(LOGITS, k)
    assert kept(out) == expected
    assert torch.equal(out[list(expected)], LOGITS[list(expected)])  # kept logits unchanged
    assert (out[[i for i in range(5) if i not in expected]] == INF).all()


# p -> the nucleus: the fewest most likely words whose probabilities add up to at least p
@pytest.mark.parametrize("p, expected", [(0.05, {1}), (0.5, {1}), (0.55, {0, 1}), (0.7, {0, 1}),
                                         (0.75, {0, 1, 3}), (0.85, {0, 1, 3}), (0.9, {0, 1, 3, 4}),
                                         (0.97, {0, 1, 2, 3, 4}), (1.0, {0, 1, 2, 3, 4})])
def test_top_p_keeps_the_smallest_set_whose_mass_reaches_p(p, expected):
    out = top_p_filter(LOGITS, p)
    assert kept(out) == expected
    mass = PROBS[list(expected)].sum().item()
    assert mass >= p - 1e-6  # enough mass ...
    smallest = min(PROBS[list(expected)]).item()
    assert mass - smallest < p  # ... and one word fewer would not be enough


def test_ties_are_kept_or_cut_together():
    z = torch.tensor([1.0, 2.0, 1.0, 0.0, 2.0])
    assert kept(top_k_filter(z, 1)) == {1, 4}  # two words share the largest logit
    assert kept(top_k_filter(z, 3)) == {0, 1, 2, 4}
    assert kept(top_p_filter(z, 0.3)) == {1, 4}  # the first needed word is tied with another
    flipped = z.flip(0)  # the result does not depend on the order of the vocabulary
    assert kept(top_k_filter(flipped, 3)) == {4 - i for i in kept(top_k_filter(z, 3))}


def test_the_most_likely_word_is_always_kept():
    z = torch.tensor([[5.0, 0.0, 0.0], [0.0, 0.0, 9.0]])
    assert torch.isfinite(top_p_filter(z, 1e-6)).sum(-1).tolist() == [1, 1]


def test_renormalised_distribution_by_hand():
    # top-k = 2 keeps 0.5 and 0.2: 0.5 / 0.7 and 0.2 / 0.7
    torch.testing.assert_close(sampling_distribution(LOGITS, top_k=2), torch.tensor([2 / 7, 5 / 7, 0, 0, 0]))
    # top-p = 0.8 keeps 0.5, 0.2 and 0.15 (0.85 >= 0.8): each divided by 0.85
    torch.testing.assert_close(sampling_distribution(LOGITS, top_p=0.8),
                               torch.tensor([0.2, 0.5, 0, 0.15, 0]) / 0.85)
    # temperature 2: p^(1/2), renormalised
    root = PROBS.sqrt()
    torch.testing.assert_close(sampling_distribution(LOGITS, temperature=2.0), root / root.sum())
    # the filters come after the temperature: at T = 2 the top-p nucleus for 0.8 holds four words
    assert kept(sampling_distribution(LOGITS, 2.0, top_p=0.8).log()) == {0, 1, 3, 4}


def test_each_filter_works_row_by_row_on_any_leading_shape():
    z = torch.randn(2, 3, 11, generator=torch.Generator().manual_seed(0))
    out = top_p_filter(z, 0.6)
    for i in range(2):
        for j in range(3):
            assert torch.equal(out[i, j], top_p_filter(z[i, j], 0.6))
    assert torch.isfinite(top_k_filter(z, 4)).sum(-1).eq(4).all()


def test_equal_to_hugging_face_warpers():
    """Hugging Face's TopKLogitsWarper and TopPLogitsWarper, an independent implementation, on random logits."""
    pytest.importorskip("transformers")
    from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper

    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        z = torch.randn(4, 40, generator=g) * 3
        k = int(torch.randint(1, 45, (), generator=g))
        p = 0.01 + 0.98 * float(torch.rand((), generator=g))
        assert torch.equal(top_k_filter(z, k), TopKLogitsWarper(k)(None, z.clone()))
        assert torch.equal(top_p_filter(z, p), TopPLogitsWarper(p)(None, z.clone()))


def test_equal_to_a_hand_computation_of_the_nucleus():
    """Without Hugging Face: sort, add up, keep while the mass before a word is below p."""
    g = torch.Generator().manual_seed(1)
    for _ in range(50):
        z = torch.randn(30, generator=g) * 2
        p = 0.05 + 0.9 * float(torch.rand((), generator=g))
        probs = z.softmax(-1).tolist()
        order = sorted(range(30), key=lambda i: -probs[i])
        keep, mass = set(), 0.0
        for i in order:
            if mass >= p:
                break
            keep.add(i)
            mass += probs[i]
        assert kept(top_p_filter(z, p)) == keep


def binomial_ok(count: int, n: int, prob: float, sigmas: float = 5.0) -> bool:
    """``count`` successes of ``n`` draws lie within ``sigmas`` standard deviations of ``n * prob``."""
    return abs(count - n * prob) <= sigmas * math.sqrt(n * prob * (1 - prob)) + 1e-9


@pytest.mark.parametrize("settings", [dict(), dict(temperature=0.5), dict(temperature=2.0), dict(top_k=3),
                                      dict(top_p=0.8), dict(temperature=2.0, top_k=4, top_p=0.7)])
def test_empirical_frequencies_match_the_distribution(settings):
    n = 20000
    logits = LOGITS.expand(n, 5)
    sampled = {"temperature": 1.0, **settings}  # sampling_distribution's default; sample_next's is greedy
    draws = sample_next(logits, generator=torch.Generator().manual_seed(0), **sampled)
    counts = torch.bincount(draws, minlength=5)
    expected = sampling_distribution(LOGITS, **settings)
    for word in range(5):
        if expected[word] == 0:
            assert counts[word] == 0, f"word {word} was filtered out but drawn"
        else:
            assert binomial_ok(int(counts[word]), n, float(expected[word])), (word, counts.tolist())
    # and as a whole: the chi-square statistic within its mean (df) plus 5 standard deviations (sqrt(2 df))
    nonzero = expected > 0
    chi2 = (((counts[nonzero] - n * expected[nonzero]) ** 2) / (n * expected[nonzero])).sum().item()
    df = int(nonzero.sum()) - 1
    assert chi2 <= df + 5 * math.sqrt(2 * max(df, 1))


def test_temperature_zero_is_greedy_and_the_generator_makes_draws_repeatable():
    z = torch.randn(6, 9, generator=torch.Generator().manual_seed(2))
    assert torch.equal(sample_next(z, temperature=0, top_k=3), z.argmax(-1))
    a = sample_next(z, 1.5, top_p=0.9, generator=torch.Generator().manual_seed(7))
    b = sample_next(z, 1.5, top_p=0.9, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a, b) and a.shape == (6,)


def test_invalid_arguments_name_what_was_expected():
    with pytest.raises(ValueError, match="k: expected a whole number >= 1, got 0"):
        top_k_filter(LOGITS, 0)
    with pytest.raises(TypeError, match="k: expected a whole number >= 1, got float 2.0"):
        top_k_filter(LOGITS, 2.0)
    with pytest.raises(ValueError, match=r"p: expected a number in \(0, 1\], got 1.5"):
        top_p_filter(LOGITS, 1.5)
    with pytest.raises(ValueError, match=r"p: expected a number in \(0, 1\], got 0"):
        top_p_filter(LOGITS, 0)
    with pytest.raises(TypeError, match="logits: expected a floating-point tensor, got dtype torch.int64"):
        top_k_filter(torch.tensor([1, 2]), 1)
    with pytest.raises(ValueError, match="temperature: expected a number > 0, got -1"):
        sampling_distribution(LOGITS, temperature=-1)
    with pytest.raises(ValueError, match=r"logits: expected 2 dimensions \(batch, vocab\), got 1"):
        sample_next(LOGITS)
