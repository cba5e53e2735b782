"""Wrong answers for assignment 13, looking inside (see ``tests/bank/__init__.py``)."""

ASSIGNMENT = "13_looking_inside"

# Exercise 1 by hand, the pattern of the exercise on <bos> A B C A B C: the weights w[t, t - 1] for t = 1 .. 6 are
# 0.5, 0.6, 0.6, 0.2, 0.1, 0.3 (mean 2.3 / 6); the repeat's w[4, 2], w[5, 3], w[6, 4] are 0.7, 0.8, 0.5 (mean 2 / 3).
EXPECTED = {"ex1_answer": [2.3 / 6, 2.0 / 3]}


def _by_hand(previous="(0.5 + 0.6 + 0.6 + 0.2 + 0.1 + 0.3) / 6", induction="(0.7 + 0.8 + 0.5) / 3") -> str:
    return f"previous = {previous}\ninduction = {induction}\nscores = {{'previous': previous, 'induction': induction}}"


def _induction(queries="torch.arange(half + 1, 2 * half + 1)", keys="queries - half + 1", mean="(0, 2)") -> str:
    return ("import torch\ndef induction_score(pattern, half):\n"
            f"    queries = {queries}\n    keys = {keys}\n"
            f"    return pattern[:, :, queries, keys].mean(dim={mean})\n")


def _dla(sigma="torch.sqrt(x.var(unbiased=False) + eps)", centred="parts - parts.mean(dim=-1, keepdim=True)",
         u="W_U[answer] - W_U[other]", scaled="gamma * centred / sigma") -> str:
    return ("import torch\ndef direct_logit_attribution(parts, gamma, W_U, answer, other, eps):\n"
            f"    x = parts.sum(dim=0)\n    sigma = {sigma}\n    centred = {centred}\n    u = {u}\n"
            f"    return ({scaled}) @ u\n")


def _sweep(body="(patched_metric(layer, head).mean() - base) / gap", base="corrupted.mean()",
           gap="clean.mean() - corrupted.mean()", shape="n_layers, n_heads", index="layer, head") -> str:
    return ("import torch\ndef restored_fractions(patched_metric, clean, corrupted, n_layers, n_heads):\n"
            f"    base, gap = {base}, {gap}\n    r = torch.zeros({shape}, dtype=clean.dtype)\n"
            "    for layer in range(n_layers):\n        for head in range(n_heads):\n"
            f"            r[{index}] = {body}\n    return r\n")


WRONG = {
    "ex1_answer": [
        ("previous over all seven rows", _by_hand(previous="(0.5 + 0.6 + 0.6 + 0.2 + 0.1 + 0.3) / 7"),
         "no previous token"),
        ("the main diagonal", _by_hand(previous="(0.5 + 0.2 + 0.1 + 0.0 + 0.0 + 0.0) / 6"), "main diagonal"),
        ("the two swapped", _by_hand(previous="(0.7 + 0.8 + 0.5) / 3",
                                     induction="(0.5 + 0.6 + 0.6 + 0.2 + 0.1 + 0.3) / 6"), "this is the induction"),
        ("the induction score is the previous-token one", _by_hand(
            induction="(0.5 + 0.6 + 0.6 + 0.2 + 0.1 + 0.3) / 6"), "this is the previous-token score"),
        ("the earlier copy itself", _by_hand(induction="(0.1 + 0.1 + 0.1) / 3"), "earlier copy"),
        ("first half included", _by_hand(induction="(0.2 + 0.2 + 0.7 + 0.8 + 0.5) / 5"), "first half"),
        ("induction summed", _by_hand(induction="0.7 + 0.8 + 0.5"), "summed"),
        ("a guess", _by_hand(induction="0.5"), None),
        ("a list instead of a dict", "scores = [0.383, 0.667]", "dict"),
    ],
    "ex2_answer": [
        ("the earlier copy itself", _induction(keys="queries - half"), "earlier copy"),
        ("one position too far", _induction(keys="queries - half + 2"), "too far"),
        ("first half included", "def induction_score(pattern, half):\n"
         "    return pattern.diagonal(offset=-(half - 1), dim1=-2, dim2=-1).mean(dim=(0, 2))\n", "first half"),
        ("<bos> forgotten", _induction(queries="torch.arange(half, 2 * half)"), "<bos>"),
        ("averaged over the heads", _induction(mean="(1, 2)"), "heads axis"),
        ("batch kept", _induction(mean="2"), "average over the batch"),
        ("averaged over the batch and the heads", _induction(mean="(0, 1)"), "one value per query"),
        ("float32 always (.float())", "import torch\ndef induction_score(pattern, half):\n"
         "    queries = torch.arange(half + 1, 2 * half + 1)\n"
         "    return pattern[:, :, queries, queries - half + 1].mean(dim=(0, 2)).float()\n",
         "returns float32 for float64 inputs; the exercise says the result has the dtype of `pattern`"),
        ("summed over the positions", "import torch\ndef induction_score(pattern, half):\n"
         "    q = torch.arange(half + 1, 2 * half + 1)\n"
         "    return pattern[:, :, q, q - half + 1].sum(dim=2).mean(dim=0)\n", "summed"),
        ("the previous-token score", "def induction_score(pattern, half):\n"
         "    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))\n", "previous-token"),
        ("the last query left out", _induction(queries="torch.arange(half + 1, 2 * half)"), None),
    ],
    "ex3_answer": [
        ("scale not frozen", _dla(scaled="gamma * centred / torch.sqrt(parts.var(dim=-1, unbiased=False, "
                                         "keepdim=True) + eps)"), "its own standard deviation"),
        ("no scale", _dla(scaled="gamma * centred"), "not divided"),
        ("not centred", _dla(centred="parts"), "not centred"),
        ("centred on the parts axis", _dla(centred="parts - parts.mean(dim=0)"), "over the parts"),
        ("sign of the difference", _dla(u="W_U[other] - W_U[answer]"), "wrong way round"),
        ("no gamma", _dla(scaled="centred / sigma"), "gamma is missing"),
        ("unbiased variance", _dla(sigma="torch.sqrt(x.var() + eps)"), "d_model - 1"),
        ("eps outside the root", _dla(sigma="x.var(unbiased=False).sqrt() + eps"), "after the square root"),
        ("LayerNorm of every part", "import torch.nn.functional as F\n"
         "def direct_logit_attribution(parts, gamma, W_U, answer, other, eps):\n"
         "    return F.layer_norm(parts, parts.shape[-1:], gamma, None, eps) @ (W_U[answer] - W_U[other])\n",
         "its own standard deviation"),
        ("the rows of W_U as columns", _dla(u="W_U[:, answer] - W_U[:, other]"), None),
        ("centred in the caller's parts (parts -= ...)",
         "import torch\ndef direct_logit_attribution(parts, gamma, W_U, answer, other, eps):\n"
         "    sigma = torch.sqrt(parts.sum(dim=0).var(unbiased=False) + eps)\n"
         "    parts -= parts.mean(dim=-1, keepdim=True)\n"
         "    return (gamma * parts / sigma) @ (W_U[answer] - W_U[other])\n",
         "changes its input `parts` in place; the exercise says the inputs are not changed"),
    ],
    "ex4_answer": [
        ("mean of the ratios", _sweep(body="((patched_metric(layer, head) - corrupted) / (clean - corrupted)).mean()"),
         "then divide"),
        ("not normalised", _sweep(gap="1.0"), "not divided by clean - corrupted"),
        ("from the clean end", _sweep(body="(clean.mean() - patched_metric(layer, head).mean()) / gap"),
         "still missing"),
        ("denominator reversed", _sweep(gap="corrupted.mean() - clean.mean()"), "corrupted - clean"),
        ("the patched metric itself", _sweep(body="patched_metric(layer, head).mean()"), "patched metric itself"),
        ("heads by layers", _sweep(shape="n_heads, n_layers", index="head, layer"), "(n_heads, n_layers)"),
        ("each head asked twice", _sweep(body="(patched_metric(layer, head).mean() - base) / gap "
                                         "if patched_metric(layer, head) is not None else 0.0"), "once per head"),
        ("the first prompt only", _sweep(body="(patched_metric(layer, head)[0] - corrupted[0]) / (clean[0] - "
                                         "corrupted[0])"), None),
        ("float32 for float64 metrics", _sweep().replace(", dtype=clean.dtype", ""),
         "returns float32 for float64 inputs; the exercise says the result has the dtype of `clean`"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("fractions and tensors", "import torch\nfrom fractions import Fraction\n"
         "scores = {'previous': Fraction(23, 60) * 1.0, 'induction': torch.tensor(2 / 3, dtype=torch.float64)}"),
    ],
    "ex2_answer": [
        ("the stripe by diagonal, in numpy", "import numpy as np\ndef induction_score(pattern, half):\n"
         "    w = pattern.numpy()\n"
         "    stripe = np.diagonal(w, offset=-(half - 1), axis1=-2, axis2=-1)\n"
         "    return stripe[..., 2:].mean(axis=(0, 2))\n"),
    ],
    "ex3_answer": [
        ("float64 through the LayerNorm of the stream's pieces",
         "def direct_logit_attribution(parts, gamma, W_U, answer, other, eps):\n"
         "    p = parts.double()\n"
         "    x = p.sum(0)\n"
         "    sigma = ((x - x.mean()) ** 2).mean().add(eps).sqrt()\n"
         "    u = (W_U[answer] - W_U[other]).double()\n"
         "    return torch.stack([(gamma.double() * (row - row.mean()) / sigma) @ u for row in p])\n"),
    ],
    "ex4_answer": [
        ("a list of lists of floats", "def restored_fractions(patched_metric, clean, corrupted, n_layers, n_heads):\n"
         "    c, k = float(clean.mean()), float(corrupted.mean())\n"
         "    return [[(float(patched_metric(l, h).mean()) - k) / (c - k) for h in range(n_heads)]\n"
         "            for l in range(n_layers)]\n"),
    ],
}
