"""Wrong answers for assignment 05, multi-head attention (see ``tests/bank/__init__.py``)."""

ASSIGNMENT = "05_multi_head_attention"

# BERT-base: d_model 768, h 12 -> d_h 64 and 4 * (768 * 768 + 768) parameters.
EXPECTED = {"ex1_answer": [64, 4 * (768 * 768 + 768)]}

_SIZES = {
    "d_h": "64", "n_params": "4 * (768 * 768 + 768)", "Q": "(4, 9, 768)", "Q_heads": "(4, 12, 9, 64)",
    "weights": "(4, 12, 9, 9)", "head_outputs": "(4, 12, 9, 64)", "concat": "(4, 9, 768)", "output": "(4, 9, 768)",
}


def _sizes(**changes) -> str:
    entries = {**_SIZES, **changes}
    return "sizes = {" + ", ".join(f"{k!r}: {v}" for k, v in entries.items() if v is not None) + "}"


_SPLIT = "def split_heads(x, n_heads):\n    batch, seq, d_model = x.shape\n    d_h = d_model // n_heads\n"
_MERGE = "def merge_heads(x):\n    batch, heads, seq, d_h = x.shape\n"

_INIT = """import math
class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.w_q = torch.nn.Linear(d_model, d_model)
        self.w_k = torch.nn.Linear(d_model, d_model)
        self.w_v = torch.nn.Linear(d_model, d_model)
        self.w_o = torch.nn.Linear(d_model, d_model)

    def forward(self, x, memory=None):
"""


def _forward(scale="math.sqrt(q.shape[-1])", source="x if memory is None else memory", heads="self.n_heads",
             softmax="-1", scores="q @ k.transpose(-2, -1)", merge="merge_heads(out)", out="self.w_o({merge})",
             init=_INIT) -> str:
    return init + f"""        source = {source}
        q = split_heads(self.w_q(x), {heads})
        k = split_heads(self.w_k(source), {heads})
        v = split_heads(self.w_v(source), {heads})
        out = ({scores} / {scale}).softmax(dim={softmax}) @ v
        return {out.format(merge=merge)}
"""


_TRANSPOSED = _INIT + """        source = x if memory is None else memory
        lin = lambda layer, z: z @ layer.weight + layer.bias
        q = split_heads(lin(self.w_q, x), self.n_heads)
        k = split_heads(lin(self.w_k, source), self.n_heads)
        v = split_heads(lin(self.w_v, source), self.n_heads)
        out = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1) @ v
        return lin(self.w_o, merge_heads(out))
"""

WRONG = {
    "ex1_answer": [
        ("parameters without biases", _sizes(n_params="4 * 768 * 768"), "biases"),
        ("parameters without W^O", _sizes(n_params="3 * (768 * 768 + 768)"), "W^O"),
        ("every head with full-size matrices", _sizes(n_params="12 * 4 * (768 * 768 + 768)"),
         "do not add parameters"),
        ("d_h multiplied", _sizes(d_h="768 * 12"), "divided by the number of heads"),
        ("d_h of the 2017 base model", _sizes(d_h="768 // 8"), "12 heads"),
        ("split without the transpose", _sizes(Q_heads="(4, 9, 12, 64)"), ".transpose(1, 2)"),
        ("weights with d_h last", _sizes(weights="(4, 12, 9, 64)"), "(T_q, T_k)"),
        ("weights without heads", _sizes(weights="(4, 9, 9)"), "its own attention weights"),
        ("heads averaged", _sizes(concat="(4, 9, 64)"), "don't average"),
        ("Q already split", _sizes(Q="(4, 12, 9, 64)"), "before the split"),
        ("shapes as strings", _sizes(output="'(4, 9, 768)'"), "tuple of ints"),
        ("a key missing", _sizes(concat=None), "missing the key(s) concat"),
        ("not a dict", "sizes = [64, 2362368]", "expected a dict"),
    ],
    "ex2_answer": [
        ("no transpose", _SPLIT + "    return x.reshape(batch, seq, n_heads, d_h)", ".transpose(1, 2)"),
        ("reshape straight to the heads layout", _SPLIT + "    return x.reshape(batch, n_heads, seq, d_h)",
         "cuts the sequence"),
        ("every h-th feature", _SPLIT + "    return x.reshape(batch, seq, d_h, n_heads).permute(0, 3, 1, 2)",
         "neighbouring features"),
        ("heads and d_h swapped", _SPLIT + "    return x.reshape(batch, seq, d_h, n_heads).transpose(1, 2)",
         "swapped"),
        ("crashes", _SPLIT + "    return x.view(batch, n_heads, d_h)", "raised RuntimeError"),
        ("returns the input", _SPLIT + "    return x", "expected shape"),
    ],
    "ex3_answer": [
        ("no transpose", _MERGE + "    return x.reshape(batch, seq, heads * d_h)", "mixes different tokens"),
        ("heads interleaved", _MERGE + "    return x.permute(0, 2, 3, 1).reshape(batch, seq, heads * d_h)",
         "don't interleave"),
        ("view after transpose", _MERGE + "    return x.transpose(1, 2).view(batch, seq, heads * d_h)",
         "raised RuntimeError"),
        ("heads averaged", _MERGE + "    return x.mean(dim=1)", "averaging"),
        ("not glued", _MERGE + "    return x.transpose(1, 2)", "glue"),
    ],
    "ex4_answer": [
        ("weights transposed: x @ w.weight + b", _TRANSPOSED, "transposed"),
        ("no 1/sqrt(d_h)", _forward(scale="1.0"), "forgot to divide"),
        ("divided by sqrt(d_model)", _forward(scale="math.sqrt(x.shape[-1])"), "sqrt(d_model)"),
        ("one wide head", _forward(heads="1"), "one head of width d_model"),
        ("no W^O", _forward(out="{merge}"), "W^O"),
        ("merged without the transpose", _forward(merge="out.reshape(x.shape)"), "merged without"),
        ("softmax over the queries", _forward(softmax="-2"), "wrong axis"),
        ("queries and keys swapped", _forward(scores="k @ q.transpose(-2, -1)"), "swapped"),
        ("cross-attention ignores memory", _forward(source="x"), "come from memory"),
        ("W^O under another name", _forward(out="self.out({merge})", init=_INIT.replace("self.w_o", "self.out")),
         "self.w_o"),
        ("projections without bias",
         _forward(init=_INIT.replace("(d_model, d_model)", "(d_model, d_model, bias=False)")), "with a bias"),
        ("returns the weights too", _forward(out="(self.w_o({merge}), out)"), "returned a tuple"),
        ("crashes", _forward(scores="q @ k"), "raised"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("numpy ints",
         "import numpy as np\n"
         "d_model, h, batch, seq = np.int64(768), np.int64(12), np.int64(4), np.int64(9)\n"
         "d_h = d_model // h\n"
         "sizes = {'d_h': d_h, 'n_params': 4 * (d_model * d_model + d_model), 'Q': (batch, seq, d_model),\n"
         "         'Q_heads': (batch, h, seq, d_h), 'weights': (batch, h, seq, seq), 'head_outputs': (batch, h, seq, d_h),\n"
         "         'concat': (batch, seq, h * d_h), 'output': (batch, seq, d_model)}"),
        ("tensors and torch.Size",
         "x = torch.zeros(4, 9, 768)\n"
         "d_h = torch.tensor(768 // 12)\n"
         "sizes = {'d_h': d_h, 'n_params': torch.tensor(4 * (768 * 768 + 768)), 'Q': x.shape,\n"
         "         'Q_heads': torch.Size([4, 12, 9, 64]), 'weights': [4, 12, 9, 9], 'head_outputs': (4, 12, 9, d_h),\n"
         "         'concat': (4, 9, 768), 'output': x.shape}"),
    ],
}
