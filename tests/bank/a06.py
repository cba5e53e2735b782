"""Wrong answers for assignment 06, add & norm and the feed-forward network (see ``tests/bank/__init__.py``)."""

import math

ASSIGNMENT = "06_add_norm_feed_forward"

# x = [1, 5, 2, 8]: mean 4, deviations -3, 1, -2, 4, biased variance 30 / 4 = 7.5.
_SIGMA = math.sqrt(7.5)
_Z = [d / _SIGMA for d in (-3, 1, -2, 4)]
_Y = [g * z + b for g, z, b in zip((1, 2, 1, 2), _Z, (0, 0, 1, 1))]
EXPECTED = {"ex1_answer": [4.0, 7.5, *_Z, *_Y]}


def _by_hand(variance="7.5", spread="math.sqrt(variance)", centre="v - 4", y="g * zi + b", keys=None) -> str:
    body = f"""import math
variance = {variance}
z = [({centre}) / {spread} for v in [1, 5, 2, 8]]
y = [{y} for g, zi, b in zip([1, 2, 1, 2], z, [0, 0, 1, 1])]
"""
    entries = {"mean": "4", "variance": "variance", "z": "z", "y": "y"}
    if keys is not None:
        entries = {k: entries[k] for k in keys}
    return body + "by_hand = {" + ", ".join(f"{k!r}: {v}" for k, v in entries.items()) + "}"


_LN = "def layer_norm(x, gamma, beta, eps=1e-5):\n    mean = x.mean(dim=-1, keepdim=True)\n"

_BLOCK = """class EncoderBlock(torch.nn.Module):
    def __init__(self, d_model, n_heads, d_ff, norm_first=False):
        super().__init__()
        self.self_attn = torch.nn.MultiheadAttention(d_model, n_heads, dropout=0.0, batch_first=True)
        self.linear1 = torch.nn.Linear(d_model, d_ff)
        self.linear2 = torch.nn.Linear(d_ff, d_model)
        self.norm1 = torch.nn.LayerNorm(d_model)
        self.norm2 = torch.nn.LayerNorm(d_model)
        self.norm_first = norm_first

    def forward(self, x):
        sa = lambda z: self.self_attn(z, z, z, need_weights=False)[0]
        ff = lambda z: self.linear2(torch.relu(self.linear1(z)))
"""

_PRE = "        if self.norm_first:\n            x = x + sa(self.norm1(x))\n            return x + ff(self.norm2(x))\n"
_POST = "        x = self.norm1(x + sa(x))\n        return self.norm2(x + ff(x))\n"


def _block(pre=_PRE, post=_POST, ff=None) -> str:
    src = _BLOCK + pre + post
    if ff is not None:
        src = src.replace("ff = lambda z: self.linear2(torch.relu(self.linear1(z)))", ff)
    return src


WRONG = {
    "ex1_answer": [
        ("unbiased variance", _by_hand(variance="30 / 3"), "d - 1"),
        ("divided by the variance", _by_hand(spread="variance"), "square root of the variance"),
        ("mean not subtracted", _by_hand(centre="v"), "subtract the mean"),
        ("gamma applied after beta", _by_hand(y="g * (zi + b)"), "scale first, then shift"),
        ("gamma and beta ignored", _by_hand(y="zi"), "you gave z itself"),
        ("gamma and beta swapped", _by_hand(y="b * zi + g"), "not the other way round"),
        ("standard deviation as the variance", _by_hand(variance="math.sqrt(7.5)", spread="math.sqrt(7.5)"),
         "standard deviation"),
        ("a key missing", _by_hand(keys=("mean", "z", "y")), "missing the key(s) variance"),
        ("not a dict", "by_hand = [4, 7.5]", "expected a dict"),
    ],
    "ex2_answer": [
        ("unbiased variance",
         _LN + "    var = x.var(dim=-1, keepdim=True)\n    return gamma * (x - mean) / torch.sqrt(var + eps) + beta",
         "unbiased"),
        ("eps outside the square root",
         _LN + "    var = x.var(dim=-1, keepdim=True, unbiased=False)\n"
               "    return gamma * (x - mean) / (torch.sqrt(var) + eps) + beta", "inside the square root"),
        ("eps forgotten",
         _LN + "    var = x.var(dim=-1, keepdim=True, unbiased=False)\n"
               "    return gamma * (x - mean) / torch.sqrt(var) + beta", "eps is missing"),
        ("no gamma and beta",
         _LN + "    var = x.var(dim=-1, keepdim=True, unbiased=False)\n    return (x - mean) / torch.sqrt(var + eps)",
         "forgot gamma and beta"),
        ("gamma and beta swapped",
         _LN + "    var = x.var(dim=-1, keepdim=True, unbiased=False)\n"
               "    return beta * (x - mean) / torch.sqrt(var + eps) + gamma", "gamma scales"),
        ("statistics over the first dimension",
         "def layer_norm(x, gamma, beta, eps=1e-5):\n    mean = x.mean(dim=0, keepdim=True)\n"
         "    var = x.var(dim=0, keepdim=True, unbiased=False)\n"
         "    return gamma * (x - mean) / torch.sqrt(var + eps) + beta", "first dimension"),
        ("statistics over the whole tensor",
         "def layer_norm(x, gamma, beta, eps=1e-5):\n    mean = x.mean()\n    var = x.var(unbiased=False)\n"
         "    return gamma * (x - mean) / torch.sqrt(var + eps) + beta", "whole tensor"),
        ("RMSNorm instead",
         "def layer_norm(x, gamma, beta, eps=1e-5):\n"
         "    return gamma * x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) + beta", "RMSNorm"),
        ("no keepdim",
         _LN.replace(", keepdim=True", "") + "    var = x.var(dim=-1, unbiased=False)\n"
                                             "    return gamma * (x - mean) / torch.sqrt(var + eps) + beta",
         "raised RuntimeError"),
    ],
    "ex3_answer": [
        ("no residual around attention",
         _block(pre=_PRE.replace("x = x + sa(", "x = sa("), post=_POST.replace("self.norm1(x + sa(x))", "self.norm1(sa(x))")),
         "attention sublayer does not"),
        ("wirings swapped",
         _block(pre="        if not self.norm_first:\n            x = x + sa(self.norm1(x))\n"
                    "            return x + ff(self.norm2(x))\n"), "-norm wiring; norm_first="),
        ("always post-norm", _block(pre=""), "this is the post-norm wiring"),
        ("always pre-norm", _block(post="        x = x + sa(self.norm1(x))\n        return x + ff(self.norm2(x))\n"),
         "this is the pre-norm wiring"),
        ("no residuals", _block(post="        x = self.norm1(sa(x))\n        return self.norm2(ff(x))\n"),
         "residual is missing"),
        ("no ReLU", _block(ff="ff = lambda z: self.linear2(self.linear1(z))"), "ReLU"),
        ("norm1 for both sublayers",
         _block(post="        x = self.norm1(x + sa(x))\n        return self.norm1(x + ff(x))\n"), "its own norm"),
        ("no feed-forward sublayer", _block(post="        return self.norm1(x + sa(x))\n"), "feed-forward sublayer"),
        ("pre-norm residual adds the normalised x",
         _block(pre="        if self.norm_first:\n            n = self.norm1(x)\n            x = n + sa(n)\n"
                    "            n = self.norm2(x)\n            return n + ff(n)\n"), "un-normalised x"),
        ("post-norm normalises the sublayer, not the sum",
         _block(post="        x = x + self.norm1(sa(x))\n        return x + self.norm2(ff(x))\n"),
         "normalises the sum"),
        ("forgot [0] on self_attn",
         _block().replace("self.self_attn(z, z, z, need_weights=False)[0]", "self.self_attn(z, z, z)"),
         "raised TypeError"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("numpy", "import numpy as np\nx = np.array([1.0, 5.0, 2.0, 8.0])\nmean, variance = x.mean(), x.var()\n"
         "z = (x - mean) / np.sqrt(variance)\n"
         "by_hand = {'mean': mean, 'variance': variance, 'z': z, 'y': np.array([1, 2, 1, 2]) * z + [0, 0, 1, 1]}"),
        ("torch", "x = torch.tensor([1.0, 5.0, 2.0, 8.0])\nmean, variance = x.mean(), x.var(unbiased=False)\n"
         "z = (x - mean) / variance.sqrt()\n"
         "by_hand = {'mean': mean, 'variance': variance, 'z': z, 'y': torch.tensor([1, 2, 1, 2]) * z "
         "+ torch.tensor([0, 0, 1, 1])}"),
    ],
}
