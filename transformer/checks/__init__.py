"""Immediate, layered feedback for the exercise notebooks.

:mod:`transformer.checks.core` holds the machinery (``compare``, the layered
report and :class:`~transformer.checks.core.Mistake`);
:mod:`transformer.checks.references` the seeded references that the module
exercises are compared with; :mod:`~transformer.checks.answers` the helpers that read
an answer (counts, ids); :mod:`~transformer.checks.earlier` the pointer back to a broken
earlier answer that a later exercise calls; one module per assignment (``a04`` for
assignment 04, under the number of the map of exercises, ``tools/exercises.py``)
holds that chapter's checks, and :mod:`transformer.checks.mistakes` the known
mistakes of every exercise, as data. Every check is re-exported here, so an
exercise notebook can write ``from transformer.checks import check_attention``;
``MISTAKES`` gathers the known mistakes of every check, by the check's name.
"""

from . import a00, a01, a02, a03, a04, a05, a06, a07, a08, a09, a10, a11, a12, a13
from .a00 import RECURRENCE_KEYS, check_attend, check_elman_rnn, check_recurrence_by_hand
from .a01 import (
    BY_HAND_VOCAB,
    check_byte_tokens,
    check_count_pairs,
    check_merge_pair,
    check_tokens_by_hand,
    check_word_tokenizer,
)
from .a02 import (
    check_embed_one_hot,
    check_embedding_module,
    check_one_hot_by_hand,
    check_rms_scales,
    one_hot_exercise_inputs,
)
from .a03 import (
    TABLE_ENTRIES,
    check_relative_bias_softmax,
    check_rope,
    check_shift_matrix,
    check_sinusoidal_module,
    check_table_entries,
)
from .a04 import check_attention, check_causal_mask, check_flying_arrows, check_self_attention, flying_arrows_inputs
from .a05 import check_head_arithmetic, check_merge_heads, check_multihead_attention, check_split_heads
from .a06 import check_encoder_block, check_layer_norm, check_layer_norm_by_hand, layer_norm_by_hand_inputs
from .a07 import (
    MASKED_ROW_SCORES,
    check_causal_by_hand,
    check_causal_padding_mask,
    check_masked_attention,
    check_masked_row,
    check_padding_mask,
    check_teacher_forcing_shift,
)
from .a08 import CROSS_SHAPES_SETTING, check_cross_attention, check_cross_shapes, check_decoder_block_layer
from .a09 import (
    by_hand_inputs,
    check_greedy_decoding,
    check_masked_cross_entropy,
    check_output_by_hand,
    check_tied_output_head,
)
from .a10 import base_model_counts, check_parameter_count, check_train_step, check_translator
from .a11 import (
    check_family_mask,
    check_mask_tokens,
    check_patchify,
    check_top_k_filter,
    check_top_p_probs,
    masking_inputs,
    masking_problems,
)
from .a12 import (
    ONLINE_SCORES,
    check_cache_step,
    check_online_by_hand,
    check_online_softmax_attention,
    check_repeat_kv,
    check_swiglu,
    online_by_hand,
)
from .a13 import (
    BY_HAND_PATTERN,
    check_direct_logit_attribution,
    check_induction_score,
    check_restored_fractions,
    check_scores_by_hand,
    scores_by_hand,
)
from .core import PASSED, CheckFailed, Mistake, compare

_MODULES = (a00, a01, a02, a03, a04, a05, a06, a07, a08, a09, a10, a11, a12, a13)
MISTAKES = {name: found for module in _MODULES for name, found in module.MISTAKES.items()}
"""The known mistakes of every exercise, by the name of its check: ``MISTAKES["check_attention"]``."""

__all__ = [
    "PASSED", "CheckFailed", "MISTAKES", "Mistake", "compare",
    # chapter 0
    "check_recurrence_by_hand", "check_attend", "check_elman_rnn", "RECURRENCE_KEYS",
    # chapter 1
    "check_tokens_by_hand", "check_count_pairs", "check_merge_pair", "check_word_tokenizer", "check_byte_tokens",
    "BY_HAND_VOCAB",
    # chapter 2
    "check_one_hot_by_hand", "check_rms_scales", "check_embed_one_hot", "check_embedding_module",
    "one_hot_exercise_inputs",
    # chapter 3
    "check_table_entries", "check_shift_matrix", "check_rope", "check_relative_bias_softmax",
    "check_sinusoidal_module", "TABLE_ENTRIES",
    # chapter 4
    "check_flying_arrows", "check_attention", "check_causal_mask", "check_self_attention", "flying_arrows_inputs",
    # chapter 5
    "check_head_arithmetic", "check_split_heads", "check_merge_heads", "check_multihead_attention",
    # chapter 6
    "check_layer_norm_by_hand", "check_layer_norm", "check_encoder_block", "layer_norm_by_hand_inputs",
    # chapter 7
    "check_masked_row", "check_causal_by_hand", "check_teacher_forcing_shift", "check_padding_mask",
    "check_causal_padding_mask", "check_masked_attention", "MASKED_ROW_SCORES",
    # chapter 8
    "check_cross_shapes", "check_cross_attention", "check_decoder_block_layer", "CROSS_SHAPES_SETTING",
    # chapter 9
    "check_output_by_hand", "check_masked_cross_entropy", "check_greedy_decoding", "check_tied_output_head",
    "by_hand_inputs",
    # chapter 10
    "check_parameter_count", "check_train_step", "check_translator", "base_model_counts",
    # chapter 11
    "check_top_k_filter", "check_top_p_probs", "check_mask_tokens", "check_patchify", "check_family_mask",
    "masking_problems", "masking_inputs",
    # chapter 12
    "check_online_by_hand", "check_online_softmax_attention", "check_cache_step", "check_repeat_kv", "check_swiglu",
    "ONLINE_SCORES", "online_by_hand",
    # chapter 13
    "check_scores_by_hand", "check_induction_score", "check_direct_logit_attribution", "check_restored_fractions",
    "BY_HAND_PATTERN", "scores_by_hand",
]
