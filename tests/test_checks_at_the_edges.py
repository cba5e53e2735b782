"""A public entry point checks each argument once; the package's own calls behind it do not check again.

Every call of a ``require_*`` helper of ``transformer/_validate.py`` made from outside that module is
recorded (with ``sys.setprofile``, so it does not matter how a module imported the helper) together
with the argument name it checks. One call of an entry point must not check the same name twice with
the same helper: before the cores (``attend``, ``softmax_over_allowed``, ...) one
``MultiHeadAttention`` call checked its mask three times and made seven rank checks named ``x``
(its input, then the projections in split_heads, merge_heads and repeat_kv); ``causal_padding_mask``
checked ``ids`` twice and ``scaled_dot_product_attention`` its mask twice.
"""

import sys
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
import torch

import transformer as T
from transformer import _validate, interp, lens
from transformer.decoding import beam_search
from transformer.latent_attention import LatentConfig, latent_attention_for
from transformer.moe import MixtureOfExperts, MoEConfig, Router, load_balancing_loss, update_correction_bias
from transformer.rope_scaling import rope_frequencies
from transformer.train import warmup_inverse_sqrt

VALIDATE = str(Path(_validate.__file__).resolve())


def checks_made(call) -> Counter:
    """``Counter((helper, argument name))`` of the checks ``call()`` makes."""
    seen: Counter = Counter()

    def profile(frame, event, arg):
        if event != "call" or str(Path(frame.f_code.co_filename).resolve()) != VALIDATE:
            return
        caller = frame.f_back
        if caller is not None and str(Path(caller.f_code.co_filename).resolve()) == VALIDATE:
            return  # a helper calling another helper (require_mask -> require_tensor) is one check
        seen[frame.f_code.co_name, frame.f_locals.get("name")] += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


def r(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


IDS = torch.tensor([[5, 6, 7, 0], [5, 6, 0, 0]])
TYPES = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]])
CAUSAL_4 = T.causal_mask(4)


def seeded():
    return torch.Generator().manual_seed(0)


def logits_of(ids):
    """A ``logits_fn`` that checks nothing: ids ``(batch, T)`` -> logits ``(batch, T, 10)``."""
    return r(ids.shape[0], ids.shape[1], 10)


def cfg(**kw):
    base = dict(vocab_size=20, d_model=16, n_heads=4, d_ff=32, n_layers=2, dropout=0.0, max_len=16)
    return T.TransformerConfig(**{**base, **kw})


def gqa_with_cache():
    mha = T.MultiHeadAttention(16, 4, n_kv_heads=2, rope=T.RotaryEmbedding(4, max_len=16))
    cache = T.kv_cache.LayerCache()
    mha(r(2, 3, 16), mask=T.causal_mask(3)[None], cache=cache)
    return lambda: mha(r(2, 1, 16), mask=torch.ones(2, 1, 4, dtype=torch.bool), cache=cache)


ENTRY_POINTS = {
    "MultiHeadAttention, self, 3-d mask": lambda: T.MultiHeadAttention(16, 4)(r(2, 4, 16), mask=CAUSAL_4[None]),
    "MultiHeadAttention, 4-d mask, weights": lambda: T.MultiHeadAttention(16, 4)(
        r(2, 4, 16), mask=CAUSAL_4.expand(2, 4, 4, 4), return_weights=True),
    "MultiHeadAttention, cross": lambda: T.MultiHeadAttention(16, 4)(
        r(2, 4, 16), r(2, 6, 16), mask=torch.ones(2, 1, 6, dtype=torch.bool)),
    "MultiHeadAttention, fast": lambda: T.MultiHeadAttention(16, 4, fast=True)(r(2, 4, 16), mask=CAUSAL_4),
    "scaled_dot_product_attention": lambda: T.scaled_dot_product_attention(
        r(2, 4, 8), r(2, 4, 8), r(2, 4, 8), CAUSAL_4),
    "attention_with_weights": lambda: T.attention_with_weights(r(2, 4, 8), r(2, 4, 8), r(2, 4, 8), CAUSAL_4),
    "flash_attention": lambda: T.flash_attention(r(2, 4, 8), r(2, 4, 8), r(2, 4, 8), CAUSAL_4, block_size=2),
    "masked_softmax": lambda: T.masked_softmax(r(2, 4, 4), CAUSAL_4),
    "causal_padding_mask": lambda: T.causal_padding_mask(IDS, 0),
    "split_heads": lambda: T.split_heads(r(2, 4, 16), 4),
    "sample_next": lambda: T.sample_next(r(2, 10), 0.8, torch.Generator().manual_seed(0), top_k=5, top_p=0.9),
    "sampling_distribution": lambda: T.sampling_distribution(r(2, 10), 0.8, 5, 0.9),
    "generate, sampled": lambda: T.generate(logits_of, IDS, 3, temperature=0.8, generator=seeded(), top_k=5, top_p=0.9),
    "generate, greedy": lambda: T.generate(logits_of, IDS, 3, eos_id=1, top_k=5),
    "beam_search": lambda: beam_search(logits_of, [1, 2], 2, 3, eos_id=9),
    "BPETokenizer.train": lambda: T.BPETokenizer.train(["a b c a b", "a b d"], 3),
    "warmup_inverse_sqrt": lambda: warmup_inverse_sqrt(10, 64, 4),
    "ByteBPETokenizer.train": lambda: T.ByteBPETokenizer.train(["a b c a b", "a b d"], 260),
    "mask_tokens": lambda: T.mask_tokens(IDS + 5, 3, 20, generator=torch.Generator().manual_seed(0)),
    "TransformerConfig": lambda: T.TransformerConfig(vocab_size=20, d_model=16, n_heads=4, d_ff=32, n_layers=1,
                                                     max_len=8, n_kv_heads=2),
    # chapter 14
    "MultiHeadAttention, window and q/k norm": partial(T.MultiHeadAttention(
        16, 4, n_kv_heads=2, rope=T.RotaryEmbedding(4, max_len=16), window=2, qk_norm=True), r(2, 4, 16),
        mask=CAUSAL_4),
    "sliding_window_mask": lambda: T.masks.sliding_window_mask(4, 2, past=3),
    "rope_frequencies": lambda: rope_frequencies(8, 100.0, {"rope_type": "yarn", "factor": 2.0,
                                                             "original_max_position_embeddings": 8}),
    "MixtureOfExperts": partial(MixtureOfExperts(16, 8, MoEConfig(4, 2, n_shared=1)), r(2, 4, 16)),
    "Router": partial(Router(16, MoEConfig(4, 2, scoring="sigmoid", n_groups=2)), r(6, 16)),
    "load_balancing_loss": lambda: load_balancing_loss(r(6, 4).softmax(-1), torch.tensor([[0, 1]] * 6), 4),
    "update_correction_bias": lambda: update_correction_bias(torch.zeros(4), torch.tensor([[0, 1]] * 6)),
    "cache_bytes": lambda: T.cache_bytes(cfg(sliding_window=4), 10, torch.float16),
    "LatentAttention": partial(latent_attention_for(cfg(positional="rope", latent=LatentConfig(6, 4, 4, 4))),
                               r(2, 4, 16), mask=CAUSAL_4[None]),
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_an_entry_point_checks_each_argument_once(entry):
    checks = checks_made(ENTRY_POINTS[entry])
    assert checks, "the entry point made no check at all"
    twice = {check: n for check, n in checks.items() if n > 1}
    assert not twice, f"{entry} checked again: {twice}"


# A model runs its layers, each an entry point that checks its own inputs (n layers, n checks of x); and a
# decoding loop runs the model once per step. What the call was given is checked once: the token ids, and
# the loop's own arguments. Each entry: (build the model, return its call), the arguments checked once, and
# how many require_token_ids checks the call makes in all (None: the loop's model checks each step's ids).
CHECKED_ONCE = {
    "DecoderOnly": (lambda: partial(T.DecoderOnly(cfg()), IDS), {"ids"}, 1),
    "DecoderOnly with a cache": (lambda: partial(T.DecoderOnly(cfg()), IDS, cache=T.KVCache(2)), {"ids"}, 1),
    "EncoderOnly": (lambda: partial(T.EncoderOnly(cfg()), IDS), {"ids"}, 1),
    "EncoderOnly with token types": (lambda: partial(T.EncoderOnly(cfg(type_vocab_size=2)), IDS, TYPES),
                                     {"ids", "token_type_ids"}, 2),
    "EncoderDecoder": (lambda: partial(T.EncoderDecoder(cfg()), IDS, IDS[:, :3]), {"src", "tgt"}, 2),
    "generate_cached": (lambda: partial(T.generate_cached, T.DecoderOnly(cfg()), IDS[:, :2], 3, temperature=0.8,
                                        generator=seeded(), top_k=5, top_p=0.9),
                        {"prefix", "max_new_tokens", "temperature", "top_k", "top_p"}, None),
    "sample_decode": (lambda: partial(T.sample_decode, T.EncoderDecoder(cfg()), IDS, 3, 1, 2, temperature=0.8,
                                      generator=seeded()),
                      {"src", "max_new_tokens", "temperature"}, None),
    # chapter 13: a run with a patch (a hook on the real modules), an attribution over a cache
    "interp.run_with_patches": (lambda: partial(interp.run_with_patches, T.DecoderOnly(cfg(norm_first=True)), IDS,
                                                {"blocks.0.attn.z": interp.ablated("zero", head=1)}), {"ids"}, 1),
    "interp.run_with_cache": (lambda: partial(interp.run_with_cache, T.DecoderOnly(cfg(norm_first=True)), IDS),
                              {"ids"}, 1),
    "lens.logit_attribution": (lambda: partial(lens.logit_attribution, *_cached(T.DecoderOnly(cfg(norm_first=True))),
                                               position=2, answer=3, other=4), {"position", "answer", "other"}, 0),
}


def _cached(model):
    return model, interp.run_with_cache(model, IDS)[1]


@pytest.mark.parametrize("entry", CHECKED_ONCE)
def test_a_model_or_a_decoding_loop_checks_its_arguments_once(entry):
    build, once, token_checks = CHECKED_ONCE[entry]
    checks = checks_made(build())
    for name in once:
        made = {helper: n for (helper, arg), n in checks.items() if arg == name}
        assert sum(made.values()) == 1, f"{entry} checked {name}: {made}"
    if token_checks is not None:
        ids_checks = {arg: n for (helper, arg), n in checks.items() if helper == "require_token_ids"}
        assert sum(ids_checks.values()) == token_checks, f"{entry} checked token ids: {ids_checks}"


def test_the_cache_step_checks_each_argument_once():
    step = gqa_with_cache()
    checks = checks_made(step)
    assert checks[("require_mask", "mask")] == 1
    assert not {check: n for check, n in checks.items() if n > 1}


def test_the_recorder_sees_a_repeated_check():
    """The recorder itself can fail: two public calls in a row check the mask twice."""
    def twice():
        T.masked_softmax(r(4, 4), CAUSAL_4)
        T.masked_softmax(r(4, 4), CAUSAL_4)
    assert checks_made(twice)[("require_mask", "mask")] == 2
