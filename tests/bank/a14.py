"""Wrong answers for assignment 14, today's open models (see ``tests/bank/__init__.py``)."""

ASSIGNMENT = "14_open_models"

# Exercise 1 by hand: 2 * 32 * 128 (Llama 2 7B), 2 * 8 * 128 (Mistral 7B), 512 + 64 (DeepSeek-V2), 4096 * 2048.
EXPECTED = {"ex1_answer": [8192, 2048, 576, 8388608]}


def _cache(mha="2 * 32 * 128", gqa="2 * 8 * 128", mla="512 + 64", window="4096 * 2 * 8 * 128") -> str:
    return f"cache = {{'mha': {mha}, 'gqa': {gqa}, 'mla': {mla}, 'window': {window}}}"


def _mask(condition="(s <= t) & (s > t - window)") -> str:
    return ("import torch\ndef sliding_window_mask(seq_len, window):\n"
            "    t = torch.arange(seq_len)[:, None]\n    s = torch.arange(seq_len)[None, :]\n"
            f"    return {condition}\n")


def _slots(first="max(0, t - window + 1)", last="t + 1", slot="p % window", empty="-1", size="window") -> str:
    return ("import torch\ndef slot_positions(t, window):\n"
            f"    slots = torch.full(({size},), {empty}, dtype=torch.int64)\n"
            f"    for p in range({first}, {last}):\n        slots[{slot}] = p\n    return slots\n")


def _router(probs="logits.softmax(dim=-1)", top="probs.topk(k, dim=-1)", renorm="renormalize",
            out="torch.zeros_like(probs).scatter(1, top.indices, weights)") -> str:
    return ("import torch\ndef router_weights(logits, k, renormalize):\n"
            f"    probs = {probs}\n    top = {top}\n    weights = top.values\n"
            f"    if {renorm}:\n        weights = weights / weights.sum(dim=-1, keepdim=True)\n"
            f"    return {out}\n")


def _loss(f="counts.to(probs.dtype) / probs.shape[0]", mean="probs.mean(dim=0)", scale="n_experts") -> str:
    return ("import torch\ndef load_balancing_loss(probs, experts, n_experts):\n"
            "    counts = torch.bincount(experts.flatten(), minlength=n_experts)\n"
            f"    f = {f}\n    mean_prob = {mean}\n    return {scale} * (f * mean_prob).sum()\n")


def _yarn(low="max(math.floor(pair(beta_fast)), 0)", high="min(math.ceil(pair(beta_slow)), d - 1)",
          turns="turns * 2 * math.pi", out="(1 - ramp) * omega + ramp * omega / factor") -> str:
    return ("import math\nimport torch\ndef yarn_frequencies(d, base, factor, original, beta_fast=32, beta_slow=1):\n"
            f"    def pair(turns):\n        return d * math.log(original / ({turns})) / (2 * math.log(base))\n"
            f"    low = {low}\n    high = {high}\n    if low == high:\n        high += 0.001\n"
            "    i = torch.arange(d // 2, dtype=torch.float64)\n    omega = base ** (-2 * i / d)\n"
            f"    ramp = ((i - low) / (high - low)).clamp(0, 1)\n    return {out}\n")


WRONG = {
    "ex1_answer": [
        ("keys only in multi-head attention", _cache(mha="32 * 128"), "only the keys"),
        ("one head's key and value", _cache(mha="2 * 128"), "one head's key and value"),
        ("grouped-query counted with the query heads", _cache(gqa="2 * 32 * 128"), "32 query heads"),
        ("the latent without its rotated key", _cache(mla="512"), "rotated key k_rope"),
        ("a rotated key per head", _cache(mla="512 + 128 * 64"), "once per head"),
        ("the whole context in the window's cache", _cache(window="32768 * 2 * 8 * 128"), "last window"),
        ("the window's slots without their keys and values", _cache(window="2 * 8 * 128"), "one token's share"),
        ("bytes in float16 instead of numbers", _cache(mha="2 * 2 * 32 * 128"), None),
        ("a list instead of a dict", "cache = [8192, 2048, 576, 8388608]", "dict"),
    ],
    "ex2_answer": [
        ("one key too many (s >= t - window)", _mask("(s <= t) & (s >= t - window)"), "window + 1 keys"),
        ("one key too few", _mask("(s <= t) & (s > t - window + 1)"), "window - 1 keys"),
        ("not causal", _mask("(s - t).abs() < window"), "into the future"),
        ("the band above the diagonal", _mask("(t <= s) & (t > s - window)"), "transposed"),
        ("True where blocked", _mask("~((s <= t) & (s > t - window))"), "hidden"),
        ("causal only", _mask("s <= t"), "plain causal mask"),
        ("a float mask", _mask("((s <= t) & (s > t - window)).float()"), None),
        ("tril and triu with the wrong diagonal", "import torch\ndef sliding_window_mask(seq_len, window):\n"
         "    ones = torch.ones(seq_len, seq_len, dtype=torch.bool)\n"
         "    return ones.tril() & ones.triu(-window)\n", "window + 1 keys"),
    ],
    "ex3_answer": [
        ("before writing t", _slots(first="max(0, t - window)", last="t"), "just before position t"),
        ("oldest first", "import torch\ndef slot_positions(t, window):\n"
         "    p = torch.arange(t - window + 1, t + 1)\n    return torch.where(p < 0, -1, p)\n", "order of age"),
        ("slots counted from 1", _slots(slot="(p + 1) % window"), "(p + 1) mod window"),
        ("empty slots as 0", _slots(empty="0"), "-1"),
        ("window - 1 slots", _slots(first="max(0, t - window + 2)", slot="p % (window - 1)", size="window - 1"),
         "window - 1 slots"),
        ("slot t // window", _slots(slot="(p // window) % window"), None),
        ("a list of floats in age order", "def slot_positions(t, window):\n"
         "    return [float(p) if p >= 0 else -1.0 for p in range(t - window + 1, t + 1)]\n", None),
    ],
    "ex4_answer": [
        ("softmax after the top-k", _router(probs="logits", top="logits.topk(k, dim=-1)",
                                            out="torch.zeros_like(logits).scatter(1, top.indices, "
                                                "top.values.softmax(dim=-1))"), "softmax after the top-k"),
        ("never renormalised", _router(renorm="False"), "divided by their sum"),
        ("always renormalised", _router(renorm="True"), "softmax after the top-k"),
        ("softmax over the tokens", _router(probs="logits.softmax(dim=0)", top="logits.topk(k, dim=-1)",
                                            out="torch.zeros_like(probs).scatter(1, top.indices, "
                                                "probs.gather(1, top.indices) / (probs.gather(1, top.indices)"
                                                ".sum(dim=-1, keepdim=True) if renormalize else 1))"),
         "over the tokens"),
        ("the k smallest", _router(top="probs.topk(k, dim=-1, largest=False)"), "lowest scores"),
        ("every expert kept", "def router_weights(logits, k, renormalize):\n    return logits.softmax(dim=-1)\n",
         "every expert has a weight"),
        ("the k weights alone", _router(out="weights"), "(tokens, n_experts) table"),
        ("float32 always", _router(probs="logits.float().softmax(dim=-1)"),
         "returns float32 for float64 inputs; the exercise says the result has the dtype of `logits`"),
        ("the scores kept instead of the probabilities", _router(probs="logits", renorm="False"), None),
    ],
    "ex5_answer": [
        ("no factor n_experts", _loss(scale="1"), "not multiplied by the number of experts"),
        ("f divided by all the choices", _loss(f="counts.to(probs.dtype) / experts.numel()"), "sum to 1"),
        ("counts not divided", _loss(f="counts.to(probs.dtype)"), "divide its count"),
        ("f from the probabilities", _loss(f="probs.mean(dim=0)"), "router's probabilities"),
        ("n_experts squared", _loss(scale="n_experts ** 2"), "twice"),
        ("float32 always", _loss(mean="probs.float().mean(dim=0)", f="counts.float() / probs.shape[0]"),
         "returns float32 for float64 inputs; the exercise says the result has the dtype of `probs`"),
        ("one value per expert", "import torch\ndef load_balancing_loss(probs, experts, n_experts):\n"
         "    f = torch.bincount(experts.flatten(), minlength=n_experts).to(probs.dtype) / probs.shape[0]\n"
         "    return n_experts * f * probs.mean(dim=0)\n", None),
        ("P of the first token only", _loss(mean="probs[0]"), None),
    ],
    "ex6_answer": [
        ("the ramp reversed", _yarn(out="ramp * omega + (1 - ramp) * omega / factor"), "the slow ones kept"),
        ("position interpolation", _yarn(out="omega / factor"), "position interpolation"),
        ("multiplied by factor", _yarn(out="(1 - ramp) * omega + ramp * omega * factor"), "turn more slowly"),
        ("not rounded", _yarn(low="max(pair(beta_fast), 0)", high="min(pair(beta_slow), d - 1)"), "rounded outward"),
        ("rounded the other way", _yarn(low="max(math.ceil(pair(beta_fast)), 0)",
                                        high="min(math.floor(pair(beta_slow)), d - 1)"), None),
        ("turns without 2 pi", _yarn(turns="turns"), "2 pi"),
        ("the betas swapped", _yarn(low="max(math.floor(pair(beta_slow)), 0)",
                                    high="min(math.ceil(pair(beta_fast)), d - 1)"), "swapped"),
        ("the ramp over all d entries", _yarn().replace("torch.arange(d // 2,", "torch.arange(d,"), None),
    ],
}

RIGHT = {
    "ex6_answer": [
        ("float32, the ramp in numpy", "import math\nimport numpy as np\n"
         "def yarn_frequencies(d, base, factor, original, beta_fast=32, beta_slow=1):\n"
         "    at = lambda r: d * math.log(original / (r * 2 * math.pi)) / (2 * math.log(base))\n"
         "    low, high = max(math.floor(at(beta_fast)), 0), min(math.ceil(at(beta_slow)), d - 1)\n"
         "    i = np.arange(d // 2, dtype=np.float32)\n    omega = np.float32(base) ** (-2 * i / d)\n"
         "    ramp = np.clip((i - low) / (high - low + 0.001 * (low == high)), 0, 1)\n"
         "    return omega * (1 - ramp + ramp / factor)\n"),
    ],
    "ex1_answer": [
        ("tensors and floats", "import torch\n"
         "cache = {'mha': torch.tensor(8192), 'gqa': 2048.0, 'mla': torch.tensor(576.0, dtype=torch.float64), "
         "'window': 2 ** 23}"),
    ],
    "ex2_answer": [
        ("tril and triu", "import torch\ndef sliding_window_mask(seq_len, window):\n"
         "    ones = torch.ones(seq_len, seq_len, dtype=torch.bool)\n"
         "    return ones.tril() & ones.triu(-(window - 1))\n"),
    ],
    "ex3_answer": [
        ("one line, a list of ints", "def slot_positions(t, window):\n"
         "    return [t - (t - i) % window if t - (t - i) % window >= 0 else -1 for i in range(window)]\n"),
    ],
    "ex4_answer": [
        ("in numpy, the experts chosen by argsort", "import numpy as np\n"
         "def router_weights(logits, k, renormalize):\n"
         "    x = logits.numpy()\n"
         "    p = np.exp(x - x.max(-1, keepdims=True))\n    p = p / p.sum(-1, keepdims=True)\n"
         "    keep = np.argsort(-x, axis=-1)[:, :k]\n    out = np.zeros_like(p)\n"
         "    np.put_along_axis(out, keep, np.take_along_axis(p, keep, -1), -1)\n"
         "    if renormalize:\n        out = out / out.sum(-1, keepdims=True)\n    return torch.from_numpy(out)\n"),
    ],
    "ex5_answer": [
        ("a one-hot count", "import torch.nn.functional as F\n"
         "def load_balancing_loss(probs, experts, n_experts):\n"
         "    f = F.one_hot(experts, n_experts).sum(dim=(0, 1)).to(probs.dtype) / len(probs)\n"
         "    return n_experts * (f @ probs.mean(dim=0))\n"),
    ],
}
