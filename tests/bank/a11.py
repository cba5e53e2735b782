"""Wrong answers for assignment 11, GPT, BERT and ViT (see ``tests/bank/__init__.py``)."""

ASSIGNMENT = "11_gpt_bert_vit"

_TOP_K = """
def top_k_filter(logits, k):
    kth = logits.topk({keep}, dim={dim}{largest}).values[..., -1:]
    return {result}
"""


def _top_k(keep="k", dim="-1", largest="", result='logits.masked_fill(logits {op} kth, {fill})', op="<",
           fill='float("-inf")'):
    return _TOP_K.format(keep=keep, dim=dim, largest=largest, result=result.format(op=op, fill=fill))


_TOP_P = """
def top_p_probs(logits, p, temperature=1.0):
    probs = {probs}
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    keep_sorted = {keep}
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    kept = {kept}
    return {result}
"""


def _top_p(probs="(logits / temperature).softmax(dim=-1)", keep="sorted_probs.cumsum(dim=-1) - sorted_probs < p",
           kept="probs * keep", result="kept / kept.sum(dim=-1, keepdim=True)"):
    return _TOP_P.format(probs=probs, keep=keep, kept=kept, result=result)


_MASK = """
def mask_tokens(ids, mask_id, vocab_size, special_ids, p, generator):
    special = torch.tensor([*special_ids, mask_id])
    ordinary = torch.tensor([i for i in range(vocab_size) if i not in special.tolist()])
    chosen = (torch.rand(ids.shape, generator=generator) < {p}){allowed}
    roll = torch.rand(ids.shape, generator=generator)
    random_ids = {pool}[torch.randint(len({pool}), ids.shape, generator=generator)]
    inputs = torch.where({where} & (roll < {masked}), mask_id, ids)
    inputs = torch.where({where} & (roll >= {masked}) & (roll < 0.9), random_ids, inputs)
    labels = {labels}
    return inputs, labels
"""


def _mask(p="p", allowed=" & ~torch.isin(ids, special)", pool="ordinary", where="chosen", masked="0.8",
          labels="torch.where(chosen, ids, -100)", generator=None):
    src = _MASK.format(p=p, allowed=allowed, pool=pool, where=where, masked=masked, labels=labels)
    return src.replace("generator=generator", f"generator={generator}") if generator else src


_PATCH = """
def patchify(images, p):
    b, c, h, w = images.shape
    x = images.reshape(b, c, h // p, p, w // p, p)
    x = x.permute({order})
    return x.reshape(b, (h // p) * (w // p), c * p * p)
"""

_FAMILY = """
def attention_mask(family, ids, pad_id):
    batch, t = ids.shape
    keys = {keys}
    if family == "decoder-only":
        keys = keys & torch.ones(t, t, dtype=torch.bool).{tri}()
    return keys.expand(batch, t, t)
"""


def _family(keys="(ids != pad_id)[:, None, :]", tri="tril"):
    return _FAMILY.format(keys=keys, tri=tri)


WRONG = {
    "ex1_answer": [
        ("keeps k + 1", _top_k(keep="min(k + 1, logits.shape[-1])"), "keeps k + 1"),
        ("strict comparison keeps k - 1", _top_k(op="<="), "keeps k - 1"),
        ("keeps the smallest", _top_k(largest=", largest=False", op=">"), "k smallest"),
        ("zeros instead of -inf", _top_k(fill="0.0"), "e^0 = 1"),
        ("a large negative number", _top_k(fill="-1e9"), "float('-inf')"),
        ("probabilities", _top_k(result='logits.masked_fill(logits < kth, float("-inf")).softmax(dim=-1)'),
         "probabilities"),
        ("only the k values", "def top_k_filter(logits, k):\n    return logits.topk(k, dim=-1).values\n",
         "only the k kept values"),
    ],
    "ex2_answer": [
        ("token crossing p dropped", _top_p(keep="(sorted_probs.cumsum(dim=-1) < p) | (torch.arange(probs.shape[-1]) "
                                            "== 0)"), "crosses p"),
        ("not renormalised", _top_p(result="kept"), "sum to 1"),
        ("temperature after the softmax",
         _top_p(probs="logits.softmax(dim=-1) / temperature\n    probs = probs / probs.sum(dim=-1, keepdim=True)"),
         "before the softmax"),
        ("temperature multiplied", _top_p(probs="(logits * temperature).softmax(dim=-1)"), "multiplied"),
        ("each word against p", _top_p(keep="(sorted_probs >= p) | (torch.arange(probs.shape[-1]) == 0)"),
         "own probability"),
        ("sorted order", _top_p(kept="sorted_probs * keep_sorted"), "sorted order"),
    ],
    "ex3_answer": [
        ("special tokens chosen", _mask(allowed=""), "special tokens"),
        ("80/10/10 on every token", _mask(where="~torch.isin(ids, special)"), "every token"),
        ("labels everywhere", _mask(labels="ids.clone()"), "-100"),
        ("labels inverted", _mask(labels="torch.where(chosen, -100, ids)"), "inverted"),
        ("labels hold [MASK]", _mask(labels="torch.where(chosen, mask_id, -100)"), "original token"),
        ("every chosen token masked", _mask(masked="1.0"), "10% must become a random token"),
        ("random tokens from the whole vocabulary", _mask(pool="torch.arange(vocab_size)"), "ordinary"),
        ("p hard-coded", _mask(p="0.15"), "not a fixed 0.15"),
        ("generator ignored", _mask(generator="None"), "generator="),
        ("in place", _mask(labels="torch.where(chosen, ids, -100)\n    ids[chosen] = mask_id"),
         "changes its input `ids` in place; the exercise says the inputs are not changed"),
        ("labels as int32", _mask(labels="torch.where(chosen, ids, -100).int()"),
         "returns int32 for int64 inputs; the exercise says the result has the dtype of `ids`"),
    ],
    "ex4_answer": [
        ("columns first", _PATCH.format(order="0, 4, 2, 1, 3, 5"), "column by column"),
        ("patch transposed", _PATCH.format(order="0, 2, 4, 1, 5, 3"), "inside each patch"),
        ("channel last", _PATCH.format(order="0, 2, 4, 3, 5, 1"), "channels innermost"),
        ("reshape without permute", "def patchify(images, p):\n    b, c = images.shape[:2]\n"
                                    "    return images.reshape(b, -1, c * p * p)\n", "plain reshape"),
    ],
    "ex5_answer": [
        ("future instead of past", _family(tri="triu"), "upper triangle"),
        ("padding on the queries", _family(keys="(ids != pad_id)[:, :, None]"), "padded queries"),
        ("decoder ignores padding",
         _family(keys="(ids != pad_id)[:, None, :] if family == 'encoder-only' else torch.ones(batch, 1, t, "
                      "dtype=torch.bool)"), "also hide the padding"),
        ("encoder ignores padding",
         _family(keys="(ids != pad_id)[:, None, :] if family == 'decoder-only' else torch.ones(batch, 1, t, "
                      "dtype=torch.bool)"), "encoder-only mask must hide the padding"),
        ("encoder is causal", _family().replace('if family == "decoder-only":', "if True:"), "before and after"),
        ("one mask for the batch", "def attention_mask(family, ids, pad_id):\n"
                                   "    t = ids.shape[1]\n    return torch.ones(t, t, dtype=torch.bool).tril()\n",
         "expand it"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("scatter the top-k values back",
         "def top_k_filter(logits, k):\n    top = logits.topk(k, dim=-1)\n"
         "    return torch.full_like(logits, float('-inf')).scatter(-1, top.indices, top.values)\n"),
    ],
    "ex2_answer": [
        ("an exclusive cumulative sum and a gather back",
         "def top_p_probs(logits, p, temperature=1.0):\n"
         "    probs = torch.softmax(logits / temperature, dim=-1)\n"
         "    sorted_probs, order = torch.sort(probs, dim=-1, descending=True)\n"
         "    before = torch.cat([torch.zeros_like(sorted_probs[..., :1]), sorted_probs.cumsum(-1)[..., :-1]], -1)\n"
         "    kept = torch.where(before < p, sorted_probs, torch.zeros_like(sorted_probs))\n"
         "    kept = kept / kept.sum(-1, keepdim=True)\n"
         "    return kept.gather(-1, order.argsort(-1))\n"),
    ],
    "ex3_answer": [
        ("an exact share with multinomial draws",
         "def mask_tokens(ids, mask_id, vocab_size, special_ids, p, generator):\n"
         "    special = torch.tensor([*special_ids, mask_id])\n"
         "    ordinary = torch.tensor([i for i in range(vocab_size) if i not in special.tolist()])\n"
         "    chosen = torch.bernoulli(torch.full(ids.shape, float(p)), generator=generator).bool()\n"
         "    chosen &= ~torch.isin(ids, special)\n"
         "    action = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), ids.numel(), replacement=True,\n"
         "                               generator=generator).reshape(ids.shape)\n"
         "    random_ids = ordinary[torch.randint(len(ordinary), ids.shape, generator=generator)]\n"
         "    inputs = ids.clone()\n"
         "    inputs[chosen & (action == 0)] = mask_id\n"
         "    inputs[chosen & (action == 1)] = random_ids[chosen & (action == 1)]\n"
         "    labels = torch.full_like(ids, -100)\n"
         "    labels[chosen] = ids[chosen]\n"
         "    return inputs, labels\n"),
    ],
    "ex4_answer": [
        ("unfold by tensor methods",
         "def patchify(images, p):\n    b, c = images.shape[:2]\n"
         "    x = images.unfold(2, p, p).unfold(3, p, p)\n"
         "    return x.permute(0, 2, 3, 1, 4, 5).reshape(b, -1, c * p * p)\n"),
    ],
    "ex5_answer": [
        ("a causal mask from arange",
         "def attention_mask(family, ids, pad_id):\n    b, t = ids.shape\n"
         "    pos = torch.arange(t)\n    mask = (ids != pad_id)[:, None, :].repeat(1, t, 1)\n"
         "    if family == 'decoder-only':\n        mask = mask & (pos[None, :] <= pos[:, None])\n    return mask\n"),
    ],
}

# "in place" is scored: the hidden tests call mask_tokens a second time on the very same ids tensor and judge that
# result by the masking rule too, and the ids after the calls (the text says they are not changed).
# "generator ignored" stays reported only: its tokens and labels obey the masking rule, and the grader cannot draw
# the expected numbers itself (a correct answer may consume the generator in any order: torch.rand, bernoulli,
# multinomial), so the only reference for one call's draws is another call's, a value from the same kernel that a
# rewritten reply could copy; scoring it would let a reply rewritten after the fact score more than the code.
REPORTED_ONLY = {("ex3_answer", "generator ignored")}
