"""The map of every exercise: one row per graded answer, naming each place the exercise lives.

An exercise lives on both sides of the grader's trust boundary, always under its assignment's number ``NN``:

===========================  ==========================================================  ===================
piece                        where                                                       who may import it
===========================  ==========================================================  ===================
answer cell, grade cell      ``solutions/NN_slug/NN_slug.ipynb`` (``answer``, ``graded``)  nbgrader
visible check                ``checks/aNN.py`` (``check``)                                 the student's kernel
named mistakes               ``checks/mistakes/aNN.py`` (``MISTAKES[check]``)              the student's kernel
reference                    ``checks/references.py`` (``references``)                     the student's kernel
hidden test                  ``grader/hidden/aNN.py``, the function named ``graded``       the grader only
probes                       ``grader/kernel_side/probes/`` (``probes``)                   the grading kernel
forbidden names              ``grader/hidden/aNN.py``, ``FORBIDS[graded]`` (``forbids``)   the grader only
wrong and right answers      ``tests/bank/aNN.py``, ``WRONG[answer]`` and ``RIGHT``         the tests
===========================  ==========================================================  ===================

A row also lists what the exercise's text promises about the answer beyond its values: the inputs it does not change
(``keeps``) and the dtype of its result (``dtype_of``). The visible check and the hidden test both hold each promise,
in the words of ``checks/rule.py``; ``tests/test_exercise_promises.py`` finds the promises in the text.

The map only names things; ``tests/test_exercise_map.py`` fails when a row names something that is not there, or
when something is there that no row names. Adding an exercise starts with its row here (CONTRIBUTING.md).
The grader reads the order of an assignment's grade cells from here, and the tests read which check judges which
answer cell.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    """One graded answer. ``probes``: what the hidden test asks the kernel (``call``, ``value`` or the assignment's
    own ``aNN.name``); ``references``: the seeded PyTorch references its visible check compares with."""

    number: str                     # the assignment's number, "04"
    answer: str                     # the answer cell's grade_id, "ex2_answer"
    graded: str                     # the grade cell's grade_id, also the hidden test's name, "ex2_attention"
    defines: str                    # the name the answer cell defines, "attention"
    check: str                      # the visible check in the checks package, "check_attention"
    probes: tuple[str, ...]         # the probes the hidden test asks, "call"
    forbids: bool = False           # the text forbids something ("Do not use:"): FORBIDS[graded] holds it
    references: tuple[str, ...] = ()  # functions of checks.references the check compares with
    keeps: tuple[str, ...] = ()     # the inputs the text says are not changed, "labels"
    dtype_of: str = ""              # the input whose dtype the text says the result has, "pattern", or "torch.bool"


E = Exercise
CALL, VALUE = ("call",), ("value",)

EXERCISES = (
    E("00", "ex1_answer", "ex1_recurrence_by_hand", "answers", "check_recurrence_by_hand", VALUE),
    E("00", "ex2_answer", "ex2_attend", "attend", "check_attend", CALL, forbids=True),
    E("00", "ex3_answer", "ex3_elman_rnn", "ElmanRNN", "check_elman_rnn", ("a00.elman_rnn",), forbids=True,
      references=("elman_rnn",)),
    E("01", "ex1_answer", "ex1_tokens_by_hand", "answers", "check_tokens_by_hand", VALUE),
    E("01", "ex2_answer", "ex2_count_pairs", "count_pairs", "check_count_pairs", ("a01.call_again", "a01.call_each"),
      forbids=True, keeps=("words",)),
    E("01", "ex3_answer", "ex3_merge_pair", "merge_pair", "check_merge_pair",
      ("a01.call_again", "a01.call_each", "call"), forbids=True, keeps=("words",)),
    E("01", "ex4_answer", "ex4_word_tokenizer", "WordLevelTokenizer", "check_word_tokenizer", ("a01.tokenizer",),
      forbids=True),
    E("01", "ex5_answer", "ex5_byte_tokens", "byte_tokens", "check_byte_tokens", ("a01.call_each",), forbids=True),
    E("02", "ex1_answer", "ex1_one_hot_by_hand", "X", "check_one_hot_by_hand", VALUE),
    E("02", "ex2_answer", "ex2_rms_scales", "scales", "check_rms_scales", VALUE),
    E("02", "ex3_answer", "ex3_embed_one_hot", "embed_one_hot", "check_embed_one_hot", CALL, dtype_of="E"),
    E("02", "ex4_answer", "ex4_embedding_module", "Embedding", "check_embedding_module",
      ("a02.embedding", "a02.embedding_init"), forbids=True, references=("embedding",)),
    E("03", "ex1_answer", "ex1_table_entries", "entries", "check_table_entries", VALUE, forbids=True),
    E("03", "ex2_answer", "ex2_shift_matrix", "shift_matrix", "check_shift_matrix", CALL, forbids=True),
    E("03", "ex3_answer", "ex3_rope", "rope", "check_rope", ("a03.rope_pairs", "call"), forbids=True),
    E("03", "ex4_answer", "ex4_relative_bias_softmax", "relative_bias_softmax", "check_relative_bias_softmax", CALL,
      forbids=True),
    E("03", "ex5_answer", "ex5_sinusoidal_module", "SinusoidalPositionalEncoding", "check_sinusoidal_module",
      ("a03.sinusoidal",), forbids=True),
    E("04", "ex1_answer", "ex1_flying_arrows", "flying", "check_flying_arrows", VALUE),
    E("04", "ex2_answer", "ex2_attention", "attention", "check_attention", CALL, forbids=True),
    E("04", "ex3_answer", "ex3_kernel_regression", "kernel_regression", "check_kernel_regression", CALL,
      dtype_of="x"),
    E("04", "ex4_answer", "ex4_self_attention", "self_attention", "check_self_attention", CALL),
    E("05", "ex1_answer", "ex1_head_arithmetic", "sizes", "check_head_arithmetic", VALUE),
    E("05", "ex2_answer", "ex2_split_heads", "split_heads", "check_split_heads", CALL, forbids=True),
    E("05", "ex3_answer", "ex3_merge_heads", "merge_heads", "check_merge_heads", CALL, forbids=True),
    E("05", "ex4_answer", "ex4_multihead_attention", "MultiHeadAttention", "check_multihead_attention",
      ("a05.multihead",), forbids=True, references=("multihead_attention",)),
    E("06", "ex1_answer", "ex1_layer_norm_by_hand", "by_hand", "check_layer_norm_by_hand", VALUE, forbids=True),
    E("06", "ex2_answer", "ex2_layer_norm", "layer_norm", "check_layer_norm", CALL, forbids=True),
    E("06", "ex3_answer", "ex3_encoder_block", "EncoderBlock", "check_encoder_block", ("a06.encoder_block",),
      references=("encoder_layer",)),
    E("07", "ex1_answer", "ex1_masked_row", "weights", "check_masked_row", VALUE),
    E("07", "ex2_answer", "ex2_causal_by_hand", "allowed", "check_causal_by_hand", VALUE, forbids=True),
    E("07", "ex3_answer", "ex3_teacher_forcing", "teacher_forcing", "check_teacher_forcing_shift", CALL,
      dtype_of="tgt"),
    E("07", "ex4_answer", "ex4_padding_mask", "padding_mask", "check_padding_mask", CALL, forbids=True,
      dtype_of="torch.bool"),
    E("07", "ex5_answer", "ex5_causal_padding_mask", "causal_padding_mask", "check_causal_padding_mask", CALL,
      forbids=True, dtype_of="torch.bool"),
    E("07", "ex6_answer", "ex6_masked_attention", "masked_attention", "check_masked_attention",
      ("a07.masked_attention", "call"), forbids=True, keeps=("q", "k", "v", "mask")),
    E("08", "ex1_answer", "ex1_cross_shapes", "answer", "check_cross_shapes", VALUE),
    E("08", "ex2_answer", "ex2_cross_attention", "cross_attention", "check_cross_attention", CALL, forbids=True),
    E("08", "ex3_answer", "ex3_decoder_block", "DecoderBlock", "check_decoder_block_layer", ("a08.block",),
      forbids=True, references=("decoder_layer",)),
    E("09", "ex1_answer", "ex1_output_by_hand", "hand", "check_output_by_hand", VALUE, forbids=True),
    E("09", "ex2_answer", "ex2_masked_cross_entropy", "masked_cross_entropy", "check_masked_cross_entropy",
      ("a09.loss",), forbids=True, keeps=("labels",)),
    E("09", "ex3_answer", "ex3_greedy_decoding", "greedy_decode", "check_greedy_decoding", ("a09.greedy",),
      forbids=True, references=("german_table", "history_model"), keeps=("prefix",)),
    E("09", "ex4_answer", "ex4_tied_output_head", "OutputHead", "check_tied_output_head",
      ("a09.tied_head", "a09.untied_head"), forbids=True, references=("tied_embedding",)),
    E("10", "ex1_answer", "ex1_parameter_count", "counts", "check_parameter_count", VALUE),
    E("10", "ex2_answer", "ex2_train_step", "train_step", "check_train_step", ("a10.train_step",), forbids=True,
      references=("translator",), keeps=("src", "tgt")),
    E("10", "ex3_answer", "ex3_translator", "Translator", "check_translator",
      ("a10.translator", "a10.translator_named", "a10.translator_parts"), references=("tiny_config", "transformer"),
      keeps=("src", "tgt")),
    E("11", "ex1_answer", "ex1_top_k_filter", "top_k_filter", "check_top_k_filter", CALL, forbids=True),
    E("11", "ex2_answer", "ex2_top_p_probs", "top_p_probs", "check_top_p_probs", CALL, forbids=True),
    E("11", "ex3_answer", "ex3_mask_tokens", "mask_tokens", "check_mask_tokens", ("a11.mask_tokens",), forbids=True,
      keeps=("ids",), dtype_of="ids"),
    E("11", "ex4_answer", "ex4_patchify", "patchify", "check_patchify", CALL, forbids=True),
    E("11", "ex5_answer", "ex5_family_mask", "attention_mask", "check_family_mask", CALL, dtype_of="torch.bool"),
    E("12", "ex1_answer", "ex1_online_by_hand", "running", "check_online_by_hand", VALUE, forbids=True),
    E("12", "ex2_answer", "ex2_online_softmax_attention", "online_softmax_attention", "check_online_softmax_attention",
      CALL, forbids=True, dtype_of="q"),
    E("12", "ex3_answer", "ex3_cache_step", "cache_step", "check_cache_step", ("a12.decode_loop", "call"),
      forbids=True),
    E("12", "ex4_answer", "ex4_repeat_kv", "repeat_kv", "check_repeat_kv", CALL, forbids=True),
    E("12", "ex5_answer", "ex5_swiglu", "swiglu", "check_swiglu", CALL, forbids=True, dtype_of="x"),
    E("13", "ex1_answer", "ex1_scores_by_hand", "scores", "check_scores_by_hand", VALUE, forbids=True),
    E("13", "ex2_answer", "ex2_induction_score", "induction_score", "check_induction_score", CALL, forbids=True,
      dtype_of="pattern"),
    E("13", "ex3_answer", "ex3_direct_logit_attribution", "direct_logit_attribution",
      "check_direct_logit_attribution", CALL, forbids=True, keeps=("parts", "gamma", "W_U")),
    E("13", "ex4_answer", "ex4_restored_fractions", "restored_fractions", "check_restored_fractions",
      ("a13.sweep",), forbids=True, dtype_of="clean"),
    E("14", "ex1_answer", "ex1_cache_by_hand", "cache", "check_cache_by_hand", VALUE, forbids=True),
    E("14", "ex2_answer", "ex2_window_mask", "sliding_window_mask", "check_window_mask", CALL, forbids=True,
      dtype_of="torch.bool"),
    E("14", "ex3_answer", "ex3_slot_positions", "slot_positions", "check_slot_positions", CALL, forbids=True),
    E("14", "ex4_answer", "ex4_router_weights", "router_weights", "check_router_weights", CALL, forbids=True,
      dtype_of="logits"),
    E("14", "ex5_answer", "ex5_balancing_loss", "load_balancing_loss", "check_balancing_loss", CALL, forbids=True,
      dtype_of="probs"),
    E("14", "ex6_answer", "ex6_yarn_frequencies", "yarn_frequencies", "check_yarn_frequencies", CALL, forbids=True),
)


def of(assignment: str) -> list[Exercise]:
    """The rows of ``assignment`` (``04_queries_keys_values`` or ``04``), in the notebook's order."""
    return [e for e in EXERCISES if e.number == assignment[:2]]


def graded(assignment: str) -> list[str]:
    """The grade cells of ``assignment``, in order: the hidden tests the grader runs."""
    return [e.graded for e in of(assignment)]


def checks(assignment: str) -> dict[str, tuple[str, str]]:
    """answer cell -> (its visible check, the name the cell defines)."""
    return {e.answer: (e.check, e.defines) for e in of(assignment)}
