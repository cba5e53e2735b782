"""Wrong answers for assignment 04, queries, keys and values (see ``tests/bank/__init__.py``)."""

import math

ASSIGNMENT = "04_queries_keys_values"

# Flying arrows by hand: scores +-1/sqrt(2), weights sigmoid(+-sqrt(2)), values [1, 0] and [-1, 1].
_W1 = 1 / (1 + math.exp(-math.sqrt(2)))
EXPECTED = {"ex1_answer": [2 * _W1 - 1, 1 - _W1]}

WRONG = {
    "ex1_answer": [
        ("no 1/sqrt(d_k)", "import math\nw1 = 1 / (1 + math.exp(-2))\nflying = [2 * w1 - 1, 1 - w1]",
         "sqrt(d_k)"),
        ("returned the weights", "import math\nw1 = 1 / (1 + math.exp(-math.sqrt(2)))\nflying = [w1, 1 - w1]",
         "attention weights"),
        ("answered for 'arrows'", "import math\nw1 = 1 / (1 + math.exp(-3 / math.sqrt(2)))\nflying = [2 * w1 - 1, 1 - w1]",
         "'arrows'"),
        ("a guess", "flying = [0.5, 0.5]", None),
        ("wrong length", "flying = [0.6]", "shape"),
    ],
    "ex2_answer": [
        ("no 1/sqrt(d_k)",
         "def attention(q, k, v, mask=None):\n    s = q @ k.transpose(-2, -1)\n"
         "    if mask is not None:\n        s = s.masked_fill(~mask, float('-inf'))\n    return s.softmax(-1) @ v",
         "sqrt(d_k)"),
        ("softmax over the wrong axis",
         "import math\ndef attention(q, k, v, mask=None):\n    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
         "    if mask is not None:\n        s = s.masked_fill(~mask, float('-inf'))\n    return s.softmax(-2) @ v",
         "wrong axis"),
        ("returned the weights",
         "import math\ndef attention(q, k, v, mask=None):\n    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
         "    if mask is not None:\n        s = s.masked_fill(~mask, float('-inf'))\n    return s.softmax(-1)",
         "attention weights"),
        ("mask applied after the softmax",
         "import math\ndef attention(q, k, v, mask=None):\n    w = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)\n"
         "    if mask is not None:\n        w = w * mask\n    return w @ v",
         "after the softmax"),
        ("mask ignored",
         "import math\ndef attention(q, k, v, mask=None):\n"
         "    return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v",
         None),
        ("crashes", "def attention(q, k, v, mask=None):\n    return q @ k @ v", "raised"),
    ],
    "ex3_answer": [
        ("kernel values not normalised",
         "import torch\ndef kernel_regression(x, x_train, y_train):\n"
         "    return torch.exp(-(x[:, None] - x_train[None, :]) ** 2 / 2) @ y_train",
         "sum to 1"),
        ("normalised over the queries",
         "def kernel_regression(x, x_train, y_train):\n"
         "    return (-(x[:, None] - x_train[None, :]) ** 2 / 2).softmax(dim=0) @ y_train",
         "over the queries"),
        ("the kernel without its 1/2",
         "def kernel_regression(x, x_train, y_train):\n"
         "    return (-(x[:, None] - x_train[None, :]) ** 2).softmax(dim=-1) @ y_train",
         "halved"),
        ("the kernel divided by its sum: NaN far from the samples",
         "import torch\ndef kernel_regression(x, x_train, y_train):\n"
         "    K = torch.exp(-(x[:, None] - x_train[None, :]) ** 2 / 2)\n    return K / K.sum(1, keepdim=True) @ y_train",
         "underflows"),
        ("float32 whatever the inputs",
         "def kernel_regression(x, x_train, y_train):\n"
         "    s = -(x.float()[:, None] - x_train.float()[None, :]) ** 2 / 2\n    return s.softmax(-1) @ y_train.float()",
         "dtype"),
    ],
    "ex4_answer": [
        ("transposed weights",
         "import torch.nn.functional as F\ndef self_attention(x, W_q, W_k, W_v):\n"
         "    return F.scaled_dot_product_attention(x @ W_q.T, x @ W_k.T, x @ W_v.T)",
         "transposed"),
        ("no 1/sqrt(d_k)",
         "def self_attention(x, W_q, W_k, W_v):\n    q, k, v = x @ W_q, x @ W_k, x @ W_v\n"
         "    return (q @ k.transpose(-2, -1)).softmax(-1) @ v",
         "sqrt(d_k)"),
        ("queries and keys swapped",
         "import torch.nn.functional as F\ndef self_attention(x, W_q, W_k, W_v):\n"
         "    return F.scaled_dot_product_attention(x @ W_k, x @ W_q, x @ W_v)",
         "swapped"),
        ("no value projection",
         "import torch.nn.functional as F\ndef self_attention(x, W_q, W_k, W_v):\n"
         "    return F.scaled_dot_product_attention(x @ W_q, x @ W_k, x)",
         None),
    ],
}

RIGHT = {
    "ex2_answer": [
        ("scales q in place",
         "def attention(q, k, v, mask=None):\n"
         "    q /= math.sqrt(q.shape[-1])\n"
         "    scores = q @ k.transpose(-2, -1)\n"
         "    if mask is not None:\n"
         "        scores.masked_fill_(~mask, float('-inf'))\n"
         "    return scores.softmax(dim=-1) @ v\n"),
    ],
    "ex3_answer": [
        ("the scores as a dot product of q = (x, 1) and k_i = (x_i, -x_i^2 / 2), as in chapter 4",
         "import torch\ndef kernel_regression(x, x_train, y_train):\n"
         "    q = torch.stack([x, torch.ones_like(x)], dim=-1)\n"
         "    k = torch.stack([x_train, -x_train ** 2 / 2], dim=-1)\n"
         "    return (q @ k.T).softmax(dim=-1) @ y_train\n"),
        ("the kernel's largest value divided out by hand before the sum",
         "def kernel_regression(x, x_train, y_train):\n"
         "    s = -(x[:, None] - x_train[None, :]) ** 2 / 2\n"
         "    K = (s - s.max(dim=1, keepdim=True).values).exp()\n"
         "    return (K * y_train).sum(dim=1) / K.sum(dim=1)\n"),
    ],
}
