"""Wrong answers for assignment 07, masking (see ``tests/bank/__init__.py``)."""

import math

ASSIGNMENT = "07_masking"

# Exercise 1 by hand: softmax of [2, 1, -inf, -inf] = [e^2, e^1, 0, 0] / (e^2 + e^1) = [0.7311, 0.2689, 0, 0].
EXPECTED = {"ex1_answer": [math.e / (math.e + 1), 1 / (math.e + 1)]}

_ATTENTION_HEAD = ("import math\ndef masked_attention(q, k, v, mask):\n"
                   "    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n")

WRONG = {
    "ex1_answer": [
        ("-inf read as a score of 0",
         "import math\ne = math.e\nd = e**2 + e + 2\nweights = [e**2 / d, e / d, 1 / d, 1 / d]", "e^-inf = 0"),
        ("exponentials, not normalised", "import math\nweights = [math.exp(2), math.exp(1), 0, 0]", "exponentials"),
        ("the scores normalised instead of their exponentials", "weights = [2 / 3, 1 / 3, 0, 0]",
         "not the scores themselves"),
        ("softmax over all four, then blocked weights zeroed",
         "import math\ne = math.e\nd = e**2 + e + 2\nweights = [e**2 / d, e / d, 0, 0]", "after a softmax"),
        ("an equal split", "weights = [0.5, 0.5, 0, 0]", "share equally"),
        ("NaN from the masked entries", "weights = [0.731, 0.269, float('nan'), float('nan')]", "NaN"),
        ("only three numbers", "weights = [0.731, 0.269, 0.0]", "shape"),
    ],
    "ex2_answer": [
        ("no diagonal",
         "allowed = [[False, False, False, False], [True, False, False, False], [True, True, False, False],"
         " [True, True, True, False]]", "off by one"),
        ("upper triangle",
         "allowed = [[True, True, True, True], [False, True, True, True], [False, False, True, True],"
         " [False, False, False, True]]", "upper triangle"),
        ("PyTorch's convention (True = blocked)",
         "allowed = [[False, True, True, True], [False, False, True, True], [False, False, False, True],"
         " [False, False, False, False]]", "inverted"),
        ("everything allowed", "allowed = [[True] * 4 for _ in range(4)]", None),
        ("3 x 3", "allowed = [[True, False, False], [True, True, False], [True, True, True]]", "shape"),
        ("scores instead of booleans", "allowed = [[2, 0, 0, 0], [2, 2, 0, 0], [2, 2, 2, 0], [2, 2, 2, 2]]",
         "True/False"),
    ],
    "ex3_answer": [
        ("input and labels swapped", "def teacher_forcing(tgt):\n    return tgt[:, 1:], tgt[:, :-1]", "swapped"),
        ("labels not shifted", "def teacher_forcing(tgt):\n    return tgt[:, :-1], tgt[:, :-1]", "copy the token"),
        ("no shift", "def teacher_forcing(tgt):\n    return tgt, tgt", "nothing was shifted"),
        ("shifted along the batch", "def teacher_forcing(tgt):\n    return tgt[:-1], tgt[1:]", "batch dimension"),
        ("only the decoder input", "def teacher_forcing(tgt):\n    return tgt[:, :-1]", "pair"),
        ("labels as floats", "def teacher_forcing(tgt):\n    return tgt[:, :-1], tgt[:, 1:].float()",
         "the result has the dtype of `tgt`"),
        ("int64 for int32 ids", "def teacher_forcing(tgt):\n    return tgt[:, :-1].long(), tgt[:, 1:].long()",
         "returns int64 for int32 inputs; the exercise says the result has the dtype of `tgt`"),
        ("labels drop <eos> too", "def teacher_forcing(tgt):\n    return tgt[:, :-1], tgt[:, 1:-1]", "shape"),
    ],
    "ex4_answer": [
        ("no middle dimension", "def padding_mask(ids, pad_id):\n    return ids != pad_id", "middle dimension"),
        ("the 1 at the end", "def padding_mask(ids, pad_id):\n    return (ids != pad_id)[:, :, None]",
         "wrong place"),
        ("inverted (True at the pads)", "def padding_mask(ids, pad_id):\n    return (ids == pad_id)[:, None, :]",
         "inverted"),
        ("pad id hard-coded as 0", "def padding_mask(ids, pad_id):\n    return (ids != 0)[:, None, :]",
         "pad_id is an argument"),
        ("0/1 integers instead of booleans",
         "def padding_mask(ids, pad_id):\n    return (ids != pad_id)[:, None, :].long()", "dtype"),
    ],
    "ex5_answer": [
        ("causal part without its diagonal",
         "import torch\ndef causal_padding_mask(ids, pad_id):\n    s = ids.shape[1]\n"
         "    return torch.ones(s, s, dtype=torch.bool).tril(diagonal=-1) & padding_mask(ids, pad_id)", "diagonal"),
        ("causal only",
         "import torch\ndef causal_padding_mask(ids, pad_id):\n    b, s = ids.shape\n"
         "    return torch.ones(s, s, dtype=torch.bool).tril().expand(b, s, s)", "padding is missing"),
        ("padding only",
         "def causal_padding_mask(ids, pad_id):\n    s = ids.shape[1]\n"
         "    return padding_mask(ids, pad_id).expand(-1, s, s)", "causal part is missing"),
        ("| instead of &",
         "import torch\ndef causal_padding_mask(ids, pad_id):\n    s = ids.shape[1]\n"
         "    return torch.ones(s, s, dtype=torch.bool).tril() | padding_mask(ids, pad_id)", "not | (or)"),
        ("padded queries instead of keys",
         "import torch\ndef causal_padding_mask(ids, pad_id):\n    s = ids.shape[1]\n"
         "    return torch.ones(s, s, dtype=torch.bool).tril() & (ids != pad_id)[:, :, None]",
         "not padded queries (rows)"),
        ("padded queries and keys",
         "import torch\ndef causal_padding_mask(ids, pad_id):\n    s = ids.shape[1]\n"
         "    return torch.ones(s, s, dtype=torch.bool).tril() & padding_mask(ids, pad_id) & (ids != pad_id)[:, :, None]",
         "not padded queries (rows)"),
        ("upper triangle",
         "import torch\ndef causal_padding_mask(ids, pad_id):\n    s = ids.shape[1]\n"
         "    return torch.ones(s, s, dtype=torch.bool).triu() & padding_mask(ids, pad_id)", "upper triangle"),
        ("no diagonal",
         "import torch\ndef causal_padding_mask(ids, pad_id):\n    s = ids.shape[1]\n"
         "    return torch.ones(s, s, dtype=torch.bool).tril(-1) & padding_mask(ids, pad_id)", None),
    ],
    "ex6_answer": [
        ("plain masked softmax: NaN in the empty rows",
         _ATTENTION_HEAD + "    return s.masked_fill(~mask, float('-inf')).softmax(-1) @ v", "whose keys are all masked"),
        ("softmax over the queries",
         _ATTENTION_HEAD + "    empty = ~mask.any(-1, keepdim=True)\n"
         "    w = s.masked_fill(~(mask | empty), float('-inf')).softmax(dim=-2).masked_fill(empty, 0.0)\n"
         "    return w @ v", "the softmax went over the queries"),
        ("-1e9 instead of -inf",
         _ATTENTION_HEAD + "    return s.masked_fill(~mask, -1e9).softmax(-1) @ v", "average of the values"),
        ("NaN repaired in the output: gradients still NaN",
         _ATTENTION_HEAD + "    return (s.masked_fill(~mask, float('-inf')).softmax(-1) @ v).nan_to_num(0.0)",
         "gradients"),
        ("mask applied after the softmax",
         _ATTENTION_HEAD + "    return (s.softmax(-1) * mask) @ v", "after the softmax"),
        ("mask inverted",
         _ATTENTION_HEAD + "    w = s.masked_fill(mask, float('-inf')).softmax(-1)\n    return w.nan_to_num(0.0) @ v",
         "inverted"),
        ("no 1/sqrt(d_k)",
         "import torch\ndef masked_attention(q, k, v, mask):\n    s = q @ k.transpose(-2, -1)\n"
         "    empty = ~mask.any(-1, keepdim=True)\n"
         "    w = s.masked_fill(~(mask | empty), float('-inf')).softmax(-1).masked_fill(empty, 0.0)\n"
         "    return w @ v", "sqrt(d_k)"),
        ("returns the weights",
         _ATTENTION_HEAD + "    empty = ~mask.any(-1, keepdim=True)\n"
         "    return s.masked_fill(~(mask | empty), float('-inf')).softmax(-1).masked_fill(empty, 0.0)",
         "attention weights"),
        ("the empty rows unmasked in the caller's mask (mask |= empty)",
         _ATTENTION_HEAD + "    empty = ~mask.any(-1, keepdim=True)\n    mask |= empty\n"
         "    return s.masked_fill(~mask, float('-inf')).softmax(-1).masked_fill(empty, 0.0) @ v",
         "changes its input `mask` in place; the exercise says the inputs are not changed"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("a tensor", "weights = torch.tensor([2.0, 1.0, float('-inf'), float('-inf')]).softmax(-1)"),
        ("a numpy array", "import numpy as np\ne = np.exp([2.0, 1.0, -np.inf, -np.inf])\nweights = e / e.sum()"),
    ],
}
