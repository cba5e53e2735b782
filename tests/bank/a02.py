"""Wrong answers for assignment 02, embeddings (see ``tests/bank/__init__.py``)."""

import math

ASSIGNMENT = "02_embeddings"

# One-hot times E by hand: rows 3, 1, 4, 3 of E. The RMS numbers of the lecture: 32,000 tokens, d = 1000.
EXPECTED = {
    "ex1_answer": [1, -1, 4, 0, 3, 1, 0, 1, -2, 1, -1, 4],
    "ex2_answer": [1 / math.sqrt(32000), 1 / math.sqrt(1000), math.sqrt(1000)],
}

_EMBED = "def embed_one_hot(ids, E):\n"
_MODULE = (
    "class Embedding(torch.nn.Module):\n"
    "    def __init__(self, vocab_size, d_model):\n"
    "        super().__init__()\n"
    "        self.d_model = d_model\n"
    "        self.weight = {init}\n"
    "\n"
    "    def forward(self, ids):\n"
    "        return {forward}\n"
)
_GOOD_INIT = "torch.nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))"
_GOOD_FORWARD = "self.weight[ids] * math.sqrt(self.d_model)"

WRONG = {
    "ex1_answer": [
        ("ids counted from 1", "X = [[2, 2, 0], [1, 0, 2], [1, -1, 4], [2, 2, 0]]", "counted from 1"),
        ("tokens written as columns", "X = [[1, 0, 0, 1], [-1, 3, 1, -1], [4, 1, -2, 4]]", "as columns"),
        ("summed the sentence into one vector", "X = [2, 2, 7]", "one row per token"),
        ("a sign slip", "X = [[1, -1, 4], [0, 3, 1], [0, 1, 2], [1, -1, 4]]", None),
        ("wrote the one-hot matrix", "X = [[0, 0, 0, 1, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 1, 0]]",
         "shape"),
    ],
    "ex2_answer": [
        ("no square roots", "scales = [1 / 32000, 1 / 1000, 1000]", "square root"),
        ("L2 norm instead of RMS", "scales = [1.0, 1 / math.sqrt(1000), math.sqrt(1000)]", "L2 norm"),
        ("output entries from the vocabulary size",
         "scales = [1 / math.sqrt(32000), 1 / math.sqrt(32000), math.sqrt(1000)]", "not on the vocabulary"),
        ("lookup factor inverted", "scales = [1 / math.sqrt(32000), 1 / math.sqrt(1000), 1 / math.sqrt(1000)]",
         "not divide"),
        ("only two numbers", "scales = [1 / math.sqrt(32000), 1 / math.sqrt(1000)]", "shape"),
    ],
    "ex3_answer": [
        ("scaled by sqrt(d)", _EMBED + "    return E[ids] * E.shape[1] ** 0.5", "no scaling"),
        ("returned the one-hot vectors",
         _EMBED + "    return torch.nn.functional.one_hot(ids, E.shape[0]).to(E.dtype)", "one-hot vectors"),
        ("one_hot without num_classes",
         _EMBED + "    return torch.nn.functional.one_hot(ids).to(E.dtype) @ E", "raised"),
        ("summed over the sequence",
         _EMBED + "    return (torch.nn.functional.one_hot(ids, E.shape[0]).to(E.dtype) @ E).sum(-2)", "sums"),
        ("multiplied by E transposed",
         _EMBED + "    return torch.nn.functional.one_hot(ids, E.shape[0]).to(E.dtype) @ E.T", "raised"),
        ("float32 always (.float())",
         _EMBED + "    return torch.nn.functional.one_hot(ids, E.shape[0]).float() @ E.float()",
         "returns float32 for float64 inputs; the exercise says the result has the dtype of `E`"),
    ],
    "ex4_answer": [
        ("no sqrt(d_model) in forward", _MODULE.format(init=_GOOD_INIT, forward="self.weight[ids]"),
         "forgot to multiply"),
        ("nn.Embedding's N(0, 1) init",
         _MODULE.format(init="torch.nn.Parameter(torch.randn(vocab_size, d_model))", forward=_GOOD_FORWARD),
         "nn.Embedding's default"),
        ("divided by d_model at init",
         _MODULE.format(init="torch.nn.Parameter(torch.randn(vocab_size, d_model) / d_model)", forward=_GOOD_FORWARD),
         "instead of its square root"),
        ("uniform init",
         _MODULE.format(init="torch.nn.Parameter(torch.rand(vocab_size, d_model) / math.sqrt(d_model))",
                        forward=_GOOD_FORWARD),
         "torch.rand"),
        ("weight is a plain tensor",
         _MODULE.format(init="torch.randn(vocab_size, d_model) / math.sqrt(d_model)", forward=_GOOD_FORWARD),
         "nn.Parameter"),
        ("weight transposed",
         _MODULE.format(init="torch.nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))",
                        forward="self.weight.T[ids] * math.sqrt(self.d_model)"),
         "one row per token"),
        ("divided by sqrt(d_model) in forward", _MODULE.format(init=_GOOD_INIT, forward="self.weight[ids] / math.sqrt(self.d_model)"),
         "divided by sqrt(d_model)"),
    ],
}

