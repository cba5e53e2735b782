"""Immediate, layered feedback for the exercise notebooks.

:mod:`checks.core` holds the machinery (``compare``, the layered
report and :class:`~checks.core.Mistake`);
:mod:`checks.references` the seeded references that the module
exercises are compared with; :mod:`~checks.answers` the helpers that read
an answer (counts, ids); :mod:`~checks.earlier` the pointer back to a broken
earlier answer that a later exercise calls; one module per assignment (``a04`` for
assignment 04, under the number of the map of exercises, ``layout/exercises.py``)
holds that chapter's checks, and :mod:`checks.mistakes` the known
mistakes of every exercise, as data. Every check is re-exported here, so an
exercise notebook can write ``from checks import check_attention``;
``MISTAKES`` gathers the known mistakes of every check, by the check's name.

A name is imported from its module when it is first asked for (``HOMES`` says where each lives): an
exercise notebook loads its own chapter's checks, not all fifteen modules (a third of a second of every
graded kernel's start).
"""

from __future__ import annotations

import importlib

from .core import PASSED, CheckFailed, Mistake, compare

# the module of each assignment (its number in layout/exercises.py) and the names it exports
HOMES = {
    "a00": ("RECURRENCE_KEYS", "check_attend", "check_elman_rnn", "check_recurrence_by_hand"),
    "a01": (
        "BY_HAND_VOCAB", "check_byte_tokens", "check_count_pairs", "check_merge_pair", "check_tokens_by_hand",
        "check_word_tokenizer",
    ),
    "a02": (
        "check_embed_one_hot", "check_embedding_module", "check_one_hot_by_hand", "check_rms_scales",
        "one_hot_exercise_inputs",
    ),
    "a03": (
        "TABLE_ENTRIES", "check_relative_bias_softmax", "check_rope", "check_shift_matrix",
        "check_sinusoidal_module", "check_table_entries",
    ),
    "a04": (
        "check_attention", "check_flying_arrows", "check_kernel_regression", "check_self_attention",
        "flying_arrows_inputs",
    ),
    "a05": ("check_head_arithmetic", "check_merge_heads", "check_multihead_attention", "check_split_heads"),
    "a06": ("check_encoder_block", "check_layer_norm", "check_layer_norm_by_hand", "layer_norm_by_hand_inputs"),
    "a07": (
        "MASKED_ROW_SCORES", "check_causal_by_hand", "check_causal_padding_mask", "check_masked_attention",
        "check_masked_row", "check_padding_mask", "check_teacher_forcing_shift",
    ),
    "a08": ("CROSS_SHAPES_SETTING", "check_cross_attention", "check_cross_shapes", "check_decoder_block_layer"),
    "a09": (
        "by_hand_inputs", "check_greedy_decoding", "check_masked_cross_entropy", "check_output_by_hand",
        "check_tied_output_head",
    ),
    "a10": ("base_model_counts", "check_parameter_count", "check_train_step", "check_translator"),
    "a11": (
        "check_family_mask", "check_mask_tokens", "check_patchify", "check_top_k_filter", "check_top_p_probs",
        "masking_inputs", "masking_problems",
    ),
    "a12": (
        "ONLINE_SCORES", "check_cache_step", "check_online_by_hand", "check_online_softmax_attention",
        "check_repeat_kv", "check_swiglu", "online_by_hand",
    ),
    "a13": (
        "BY_HAND_PATTERN", "check_direct_logit_attribution", "check_induction_score", "check_restored_fractions",
        "check_scores_by_hand", "scores_by_hand",
    ),
    "a14": (
        "CACHE_MODELS", "cache_by_hand", "check_balancing_loss", "check_cache_by_hand", "check_router_weights",
        "check_slot_positions", "check_window_mask", "check_yarn_frequencies",
    ),
}
_HOME_OF = {name: module for module, names in HOMES.items() for name in names}

__all__ = ["PASSED", "CheckFailed", "MISTAKES", "Mistake", "compare", *_HOME_OF]


def _module(name: str):
    """The checks of one assignment, ``"a04"``, imported on first use."""
    return importlib.import_module(f".{name}", __name__)


def __getattr__(name: str):
    if name == "MISTAKES":
        # the known mistakes of every exercise, by the name of its check: MISTAKES["check_attention"]
        value = {check: found for module in HOMES for check, found in _module(module).MISTAKES.items()}
    elif name in HOMES:
        value = _module(name)
    elif name in _HOME_OF:
        value = getattr(_module(_HOME_OF[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *HOMES})
