"""Wrong answers for assignment 08, cross-attention (see ``tests/bank/__init__.py``)."""

ASSIGNMENT = "08_cross_attention"

# Exercise 1 by hand: batch 2, T_d 6, T_e 5, d_model 8, h 2, so d_h 4. No feedback may spell out a size.
EXPECTED = {"ex1_answer": [6, 5, 4, 8]}


def _answer(**changes):
    base = {"Q": (2, 2, 6, 4), "K": (2, 2, 5, 4), "V": (2, 2, 5, 4), "weights": (2, 2, 6, 5), "output": (2, 6, 8),
            "Q from": "decoder", "K from": "encoder", "V from": "encoder"}
    base.update(changes)
    return f"answer = {base!r}"


_CROSS_HEAD = ("import math\ndef cross_attention(x_dec, memory, W_q, W_k, W_v, src_mask=None):\n")
_CROSS_TAIL = ("    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
               "    if src_mask is not None:\n        s = s.masked_fill(~src_mask, float('-inf'))\n"
               "    return s.softmax(-1) @ v")

_BLOCK_HEAD = '''from torch import nn


class DecoderBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.multihead_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        am = None if self_mask is None else ~self_mask
        km = None if memory_mask is None else ~memory_mask[:, 0, :]
'''


def _block(body: str, head: str = _BLOCK_HEAD) -> str:
    return head + "".join(f"        {line}\n" for line in body.strip().splitlines())


_SA = "self.self_attn(x, x, x, attn_mask=am, need_weights=False)[0]"
_CA = "self.multihead_attn(z, memory, memory, key_padding_mask=km, need_weights=False)[0]"
_FF = "self.linear2(torch.relu(self.linear1(z)))"

WRONG = {
    "ex1_answer": [
        ("K and V from the decoder", _answer(K=(2, 2, 6, 4), V=(2, 2, 6, 4)), "encoder output"),
        ("Q with the source length", _answer(Q=(2, 2, 5, 4)), "Q comes from the decoder"),
        ("weights transposed", _answer(weights=(2, 2, 5, 6)), "one row per query"),
        ("square weights", _answer(weights=(2, 2, 6, 6)), "not square"),
        ("no head split", _answer(Q=(2, 2, 6, 8), K=(2, 2, 5, 8), V=(2, 2, 5, 8)), "d_h = d_model / h"),
        ("output per head", _answer(output=(2, 2, 6, 4)), "projects back to d_model"),
        ("output per source token", _answer(output=(2, 5, 8)), "per decoder position"),
        ("sources swapped", _answer(**{"Q from": "encoder", "K from": "decoder", "V from": "decoder"}),
         "queries come from the decoder"),
        ("a shape as a string", _answer(Q="(2, 2, 6, 4)"), "tuple of ints"),
        ("an entry missing", "answer = {'Q': (2, 2, 6, 4), 'K': (2, 2, 5, 4)}", "missing the key(s)"),
    ],
    "ex2_answer": [
        ("keys and values from the decoder",
         _CROSS_HEAD + "    q, k, v = x_dec @ W_q, x_dec @ W_k, x_dec @ W_v\n" + _CROSS_TAIL, "must come from memory"),
        ("queries from the memory",
         _CROSS_HEAD + "    q, k, v = memory @ W_q, memory @ W_k, memory @ W_v\n" + _CROSS_TAIL,
         "one row per decoder position"),
        ("no 1/sqrt(d_k)",
         _CROSS_HEAD + "    q, k, v = x_dec @ W_q, memory @ W_k, memory @ W_v\n"
         + _CROSS_TAIL.replace(" / math.sqrt(q.shape[-1])", ""), "sqrt(d_k)"),
        ("divided by sqrt(d_model)",
         _CROSS_HEAD + "    q, k, v = x_dec @ W_q, memory @ W_k, memory @ W_v\n"
         + _CROSS_TAIL.replace("q.shape[-1]", "x_dec.shape[-1]"), "not by sqrt(d_model)"),
        ("a causal mask on cross-attention",
         "import torch\n" + _CROSS_HEAD + "    q, k, v = x_dec @ W_q, memory @ W_k, memory @ W_v\n"
         "    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
         "    s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), float('-inf'))\n"
         "    if src_mask is not None:\n        s = s.masked_fill(~src_mask, float('-inf'))\n"
         "    return s.softmax(-1) @ v", "no causal mask"),
        ("source mask ignored",
         _CROSS_HEAD + "    q, k, v = x_dec @ W_q, memory @ W_k, memory @ W_v\n"
         "    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n    return s.softmax(-1) @ v",
         "padding mask was ignored"),
        ("source mask inverted",
         _CROSS_HEAD + "    q, k, v = x_dec @ W_q, memory @ W_k, memory @ W_v\n"
         + _CROSS_TAIL.replace("~src_mask", "src_mask"), "inverted"),
        ("projections transposed",
         _CROSS_HEAD + "    q, k, v = x_dec @ W_q.T, memory @ W_k.T, memory @ W_v.T\n" + _CROSS_TAIL, "raised"),
    ],
    "ex3_answer": [
        ("pre-norm",
         _block(f"z = x + self.self_attn(self.norm1(x), self.norm1(x), self.norm1(x), attn_mask=am, "
                f"need_weights=False)[0]\n"
                f"n = self.norm2(z)\n"
                f"z = z + self.multihead_attn(n, memory, memory, key_padding_mask=km, need_weights=False)[0]\n"
                f"n = self.norm3(z)\n"
                f"return z + self.linear2(torch.relu(self.linear1(n)))"), "pre-norm"),
        ("masks passed without inverting them",
         _block(f"am, km = self_mask, None if memory_mask is None else memory_mask[:, 0, :]\n"
                f"z = self.norm1(x + {_SA})\nz = self.norm2(z + {_CA})\nreturn self.norm3(z + {_FF})"),
         "True = blocked"),
        ("no self-attention mask",
         _block(f"z = self.norm1(x + {_SA.replace('attn_mask=am', 'attn_mask=None')})\n"
                f"z = self.norm2(z + {_CA})\nreturn self.norm3(z + {_FF})"), "must not see the future"),
        ("no source padding mask",
         _block(f"z = self.norm1(x + {_SA})\nz = self.norm2(z + {_CA.replace('key_padding_mask=km, ', '')})\n"
                f"return self.norm3(z + {_FF})"), "source padding mask was not used"),
        ("cross-attention over x",
         _block(f"z = self.norm1(x + {_SA})\n"
                f"z = self.norm2(z + self.multihead_attn(z, z, z, need_weights=False)[0])\n"
                f"return self.norm3(z + {_FF})"), "keys and values from memory"),
        ("no ReLU",
         _block(f"z = self.norm1(x + {_SA})\nz = self.norm2(z + {_CA})\n"
                f"return self.norm3(z + self.linear2(self.linear1(z)))"), "ReLU"),
        ("no residual connections",
         _block(f"z = self.norm1({_SA})\nz = self.norm2({_CA})\nreturn self.norm3({_FF})"), "residual"),
        ("cross-attention before self-attention",
         _block(f"z = self.norm1(x + self.multihead_attn(x, memory, memory, key_padding_mask=km, "
                f"need_weights=False)[0])\n"
                f"z = self.norm2(z + self.self_attn(z, z, z, attn_mask=am, need_weights=False)[0])\n"
                f"return self.norm3(z + {_FF})"), "the order is"),
        ("forgot [0] on nn.MultiheadAttention",
         _block(f"z = self.norm1(x + self.self_attn(x, x, x, attn_mask=am))\nz = self.norm2(z + {_CA})\n"
                f"return self.norm3(z + {_FF})"), "raised"),
        ("renamed sublayer",
         _block(f"z = self.norm1(x + {_SA})\nz = self.norm2(z + {_CA})\nreturn self.norm3(z + {_FF})",
                head=_BLOCK_HEAD.replace("self.multihead_attn = ", "self.cross_attn = ")),
         "could not copy the weights"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("numpy ints", "import numpy as np\n"
         "answer = {'Q': tuple(np.array([2, 2, 6, 4])), 'K': tuple(np.array([2, 2, 5, 4])), 'V': (2, 2, 5, 4),\n"
         "          'weights': torch.Size([2, 2, 6, 5]), 'output': (np.int64(2), 6, 8),\n"
         "          'Q from': 'decoder', 'K from': 'encoder', 'V from': 'encoder'}"),
    ],
    "ex3_answer": [
        ("residuals added in place (x += ...)",
         _BLOCK_HEAD + "        x += self.self_attn(x, x, x, attn_mask=am, need_weights=False)[0]\n"
         "        z = self.norm1(x)\n"
         "        z = self.norm2(z + " + _CA + ")\n"
         "        return self.norm3(z + " + _FF + ")\n"),
    ],
}
