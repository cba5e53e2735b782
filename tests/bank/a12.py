"""Wrong answers for assignment 12, from 2017 to today (see ``tests/bank/__init__.py``)."""

import math

ASSIGNMENT = "12_from_2017_to_today"

# Exercise 1 by hand, scores [1, 2 | 4, 1] in two tiles: m1 = 2, l1 = e^-1 + 1; m2 = 4, l2 = l1 e^-2 + 1 + e^-3.
_L1 = math.exp(-1) + 1
EXPECTED = {"ex1_answer": [2.0, _L1, 4.0, _L1 * math.exp(-2) + 1 + math.exp(-3)]}


def _by_hand(m1="2.0", l1="math.exp(-1) + 1", m2="4.0", l2="l1 * math.exp(-2) + 1 + math.exp(-3)") -> str:
    return (f"import math\nm1 = {m1}\nl1 = {l1}\nm2 = {m2}\nl2 = {l2}\n"
            "running = {'m1': m1, 'l1': l1, 'm2': m2, 'l2': l2}")


def _online(rescale_sum="total * rescale", rescale_acc="acc * rescale", scale="/ math.sqrt(q.shape[-1])",
            result="acc / total", shift="m_new") -> str:
    return ("import math\nimport torch\ndef online_softmax_attention(q, k, v, block_size):\n"
            "    m = q.new_full((*q.shape[:-1], 1), float('-inf'))\n"
            "    total = q.new_zeros((*q.shape[:-1], 1))\n"
            "    acc = q.new_zeros((*q.shape[:-1], v.shape[-1]))\n"
            "    for start in range(0, k.shape[-2], block_size):\n"
            f"        s = q @ k[..., start:start + block_size, :].transpose(-2, -1) {scale}\n"
            "        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))\n"
            f"        p = torch.exp(s - {shift})\n"
            "        rescale = torch.exp(m - m_new)\n"
            f"        total = {rescale_sum} + p.sum(dim=-1, keepdim=True)\n"
            f"        acc = {rescale_acc} + p @ v[..., start:start + block_size, :]\n"
            "        m = m_new\n"
            f"    return {result}\n")


def _cache(cat_k="torch.cat([k_cache, k], dim=2)", cat_v="torch.cat([v_cache, v], dim=2)",
           keys="new_k", values="new_v", result="out, new_k, new_v") -> str:
    return ("import math\nimport torch\ndef cache_step(q, k, v, k_cache, v_cache):\n"
            f"    new_k = {cat_k}\n    new_v = {cat_v}\n"
            f"    w = (q @ {keys}.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)\n"
            f"    out = w @ {values}\n    return {result}\n")


def _swiglu(body: str) -> str:
    return f"import torch\nimport torch.nn.functional as F\ndef swiglu(x, W1, W2, W3):\n    return {body}\n"


WRONG = {
    "ex1_answer": [
        ("old sum not rescaled when the maximum grew", _by_hand(l2="l1 + 1 + math.exp(-3)"), "not rescaled"),
        ("old sum rescaled twice", _by_hand(l2="l1 * math.exp(-4) + 1 + math.exp(-3)"), "twice"),
        ("tile 2 against the old maximum", _by_hand(l2="l1 + math.exp(2) + math.exp(-1)"), "old maximum"),
        ("tile 2 alone", _by_hand(l2="1 + math.exp(-3)"), "tile 2 alone"),
        ("plain exponentials", _by_hand(l1="math.exp(1) + math.exp(2)"), "plain exp(s)"),
        ("the whole row's maximum after tile 1", _by_hand(m1="4.0"), "only tile 1"),
        ("a guess", _by_hand(m2="3.0"), None),
        ("a list instead of a dict", "running = [2.0, 1.368, 4.0, 1.235]", "dict"),
    ],
    "ex2_answer": [
        ("running sums not rescaled", _online(rescale_sum="total", rescale_acc="acc"), "not rescaled"),
        ("the sum rescaled twice", _online(rescale_sum="total * rescale * rescale"), "twice"),
        ("the values not rescaled", _online(rescale_acc="acc"), "weighted sum of values was not"),
        ("not divided by the sum", _online(result="acc"), "not divided"),
        ("no 1/sqrt(d_k)", _online(scale=""), "sqrt(d_k)"),
        ("no maximum subtracted: overflow",
         "import math\nimport torch\ndef online_softmax_attention(q, k, v, block_size):\n"
         "    total = q.new_zeros((*q.shape[:-1], 1))\n    acc = q.new_zeros((*q.shape[:-1], v.shape[-1]))\n"
         "    for start in range(0, k.shape[-2], block_size):\n"
         "        p = torch.exp(q @ k[..., start:start + block_size, :].transpose(-2, -1) / math.sqrt(q.shape[-1]))\n"
         "        total = total + p.sum(dim=-1, keepdim=True)\n"
         "        acc = acc + p @ v[..., start:start + block_size, :]\n    return acc / total\n", "overflow"),
        ("only the last tile",
         "import math\ndef online_softmax_attention(q, k, v, block_size):\n"
         "    start = (k.shape[-2] - 1) // block_size * block_size\n"
         "    s = q @ k[..., start:, :].transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
         "    return s.softmax(-1) @ v[..., start:, :]\n", None),
        ("always float32",
         "import torch.nn.functional as F\ndef online_softmax_attention(q, k, v, block_size):\n"
         "    return F.scaled_dot_product_attention(q.float(), k.float(), v.float())\n",
         "returns float32 for float64 inputs; the exercise says the result has the dtype of `q`"),
    ],
    "ex3_answer": [
        ("appended on the heads axis", _cache(cat_k="torch.cat([k_cache, k], dim=1)",
                                              cat_v="torch.cat([v_cache, v], dim=1)"), "wrong axis"),
        ("prepended", _cache(cat_k="torch.cat([k, k_cache], dim=2)", cat_v="torch.cat([v, v_cache], dim=2)"),
         "in front of the cache"),
        ("attends before appending", _cache(keys="k_cache", values="v_cache"), "cached before it"),
        ("attends to its own key only", _cache(keys="k", values="v"), "its own key"),
        ("caches returned unchanged", _cache(result="out, k_cache, v_cache"), "came back as they were"),
        ("only the output", _cache(result="out"), "triple"),
        ("appended on the feature axis", _cache(cat_k="torch.cat([k_cache, k], dim=-1)",
                                                cat_v="torch.cat([v_cache, v], dim=-1)"), "raised"),
    ],
    "ex4_answer": [
        ("interleaved (x.repeat)", "def repeat_kv(x, n_rep):\n    return x.repeat(1, n_rep, 1, 1)\n", "wrong order"),
        ("interleaved (expand on the other side)",
         "def repeat_kv(x, n_rep):\n    b, h, s, d = x.shape\n"
         "    return x[:, None].expand(b, n_rep, h, s, d).reshape(b, n_rep * h, s, d)\n", "wrong order"),
        ("the sequence axis", "def repeat_kv(x, n_rep):\n    return x.repeat_interleave(n_rep, dim=2)\n",
         "sequence axis"),
        ("not merged", "def repeat_kv(x, n_rep):\n    return x[:, :, None].expand(-1, -1, n_rep, -1, -1)\n",
         "reshape it"),
        ("n_rep ignored", "def repeat_kv(x, n_rep):\n    return x\n", "shape"),
    ],
    "ex5_answer": [
        ("gate and up swapped", _swiglu("(F.silu(x @ W3) * (x @ W1)) @ W2"), "wrong projection"),
        ("SiLU of the product", _swiglu("F.silu((x @ W1) * (x @ W3)) @ W2"), "applied to the product"),
        ("both activated", _swiglu("(F.silu(x @ W1) * F.silu(x @ W3)) @ W2"), "both projections"),
        ("sigmoid (GLU)", _swiglu("(torch.sigmoid(x @ W1) * (x @ W3)) @ W2"), "sigmoid (GLU)"),
        ("ReLU (ReGLU)", _swiglu("(torch.relu(x @ W1) * (x @ W3)) @ W2"), "ReLU"),
        ("no gate", _swiglu("F.silu(x @ W1) @ W2"), "gate is missing"),
        ("no W2", _swiglu("F.silu(x @ W1) * (x @ W3)"), "back to d_model"),
        ("GELU", _swiglu("(F.gelu(x @ W1) * (x @ W3)) @ W2"), None),
        ("float32 always (.float())", _swiglu("((F.silu(x @ W1) * (x @ W3)) @ W2).float()"),
         "returns float32 for float64 inputs; the exercise says the result has the dtype of `x`"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("tensors and numpy numbers",
         "import numpy as np\ns = torch.tensor([1.0, 2.0, 4.0, 1.0], dtype=torch.float64)\n"
         "l1 = torch.exp(s[:2] - 2).sum()\n"
         "running = {'m1': np.float32(2), 'l1': l1, 'm2': 4, 'l2': l1 * math.exp(-2) + torch.exp(s[2:] - 4).sum()}"),
    ],
    "ex2_answer": [
        ("the softmax tile by tile with the log-sum-exp",
         "def online_softmax_attention(q, k, v, block_size):\n"
         "    lse, acc = None, 0\n"
         "    for start in range(0, k.shape[-2], block_size):\n"
         "        s = q @ k[..., start:start + block_size, :].transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
         "        t = s.logsumexp(-1, keepdim=True)\n"
         "        new = t if lse is None else torch.logaddexp(lse, t)\n"
         "        acc = acc * (torch.exp(lse - new) if lse is not None else 0) "
         "+ torch.exp(s - new) @ v[..., start:start + block_size, :]\n"
         "        lse = new\n"
         "    return acc\n"),
    ],
    "ex3_answer": [
        ("F.scaled_dot_product_attention, keyword order",
         "import torch.nn.functional as F\ndef cache_step(q, k, v, k_cache, v_cache):\n"
         "    keys, values = torch.cat((k_cache, k), -2), torch.cat((v_cache, v), -2)\n"
         "    return (F.scaled_dot_product_attention(q, keys, values), keys, values)\n"),
        ("a list", "def cache_step(q, k, v, k_cache, v_cache):\n"
         "    kc, vc = torch.cat([k_cache, k], 2), torch.cat([v_cache, v], 2)\n"
         "    return [((q @ kc.transpose(-2, -1)) * q.shape[-1] ** -0.5).softmax(-1) @ vc, kc, vc]\n"),
    ],
    "ex4_answer": [
        ("index_select", "def repeat_kv(x, n_rep):\n"
         "    return x.index_select(1, torch.arange(x.shape[1] * n_rep) // n_rep)\n"),
    ],
    "ex5_answer": [
        ("F.silu", "import torch.nn.functional as F\ndef swiglu(x, W1, W2, W3):\n"
         "    return torch.matmul(F.silu(x @ W1) * (x @ W3), W2)\n"),
    ],
}

