"""Wrong answers for assignment 03, positional encodings (see ``tests/bank/__init__.py``)."""

import math

ASSIGNMENT = "03_positional_encodings"

_W1 = 1 / 10000 ** (2 / 5)  # the frequency of pair 1 when d_model = 5
EXPECTED = {"ex1_answer": [math.sin(1), math.cos(2), math.sin(3 * _W1), math.cos(4 * _W1)]}

_SHIFT = (
    "def shift_matrix(c, d_model):\n"
    "    M = torch.zeros(d_model, d_model)\n"
    "    for i in range(d_model // 2):\n"
    "        a = {angle}\n"
    "        M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = math.cos(a), {s01}\n"
    "        M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = {s10}, math.cos(a)\n"
    "    return M\n"
)
_ANGLE = "c / 10000 ** (2 * i / d_model)"

_ROPE = (
    "def rope(x, t):\n"
    "    d = x.shape[0]\n"
    "    w = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)\n"
    "    a = {angle}\n"
    "    cos, sin = a.cos().float(), a.sin().float()\n"
    "    x1, x2 = {pairs}\n"
    "    {body}\n"
)
_INTERLEAVE = "return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten()"

_REL = "def relative_bias_softmax(scores, bias, t):\n    T = scores.shape[0]\n    i = torch.arange(T)\n"

_MODULE = (
    "class SinusoidalPositionalEncoding(torch.nn.Module):\n"
    "    def __init__(self, d_model, max_len=512):\n"
    "        super().__init__()\n"
    "        pos = torch.arange(max_len, dtype=torch.float64)[:, None]\n"
    "        two_i = torch.arange(0, d_model, 2, dtype=torch.float64)[None, :]\n"
    "        angles = pos / 10000 ** ({exponent})\n"
    "        table = torch.zeros(max_len, d_model, dtype=torch.float64)\n"
    "        table[:, 0::2] = angles.{even}()\n"
    "        table[:, 1::2] = angles{odd_slice}.{odd}()\n"
    "        {store}\n"
    "\n"
    "    def forward(self, x):\n"
    "        return {forward}\n"
)
_GOOD = dict(exponent="two_i / d_model", even="sin", odd="cos", odd_slice="[:, : d_model // 2]",
             store="self.register_buffer('table', table.float())", forward="x + self.table[: x.shape[1]]")


def _module(**changes):
    return _MODULE.format(**{**_GOOD, **changes})


WRONG = {
    "ex1_answer": [
        ("sine and cosine swapped",
         "w1 = 1 / 10000 ** (2 / 5)\nentries = [math.cos(1), math.sin(2), math.cos(3 * w1), math.sin(4 * w1)]",
         "swapped"),
        ("column number used for i",
         "entries = [math.sin(1 / 10000 ** 0), math.cos(2 / 10000 ** (2 / 5)), math.sin(3 / 10000 ** (4 / 5)), "
         "math.cos(4 / 10000 ** (6 / 5))]",
         "column number for i"),
        ("degrees instead of radians",
         "w1 = 1 / 10000 ** (2 / 5)\nr = math.radians\n"
         "entries = [math.sin(r(1)), math.cos(r(2)), math.sin(r(3 * w1)), math.cos(r(4 * w1))]",
         "radians"),
        ("table read transposed (the lecture prints dimensions as rows)",
         "w1 = 1 / 10000 ** (2 / 5)\nw2 = 1 / 10000 ** (4 / 5)\n"
         "entries = [math.cos(0), math.sin(1 * w1), math.cos(2 * w1), math.sin(3 * w2)]",
         "transposed"),
        ("rounded to two decimals", "entries = [0.84, -0.42, 0.08, 0.99]", None),
        ("only three entries", "entries = [math.sin(1), math.cos(2), math.sin(3 / 10000 ** 0.4)]", "shape"),
    ],
    "ex2_answer": [
        ("RoPE's rotation instead of the shift (turns the wrong way)",
         _SHIFT.format(angle=_ANGLE, s01="-math.sin(a)", s10="math.sin(a)"), "wrong way"),
        ("the same frequency for every pair", _SHIFT.format(angle="c", s01="math.sin(a)", s10="-math.sin(a)"),
         "own angle"),
        ("forgot the offset c",
         _SHIFT.format(angle="1 / 10000 ** (2 * i / d_model)", s01="math.sin(a)", s10="-math.sin(a)"),
         "multiplies the frequency"),
        ("column number 2i used for i",
         _SHIFT.format(angle="c / 10000 ** (4 * i / d_model)", s01="math.sin(a)", s10="-math.sin(a)"),
         "column number 2i"),
        ("the identity", "def shift_matrix(c, d_model):\n    return torch.eye(d_model)", None),
    ],
    "ex3_answer": [
        ("turns clockwise", _ROPE.format(angle="-t * w", pairs="x[0::2], x[1::2]", body=_INTERLEAVE), "clockwise"),
        ("pairs the two halves",
         _ROPE.format(angle="t * w", pairs="x[: d // 2], x[d // 2:]",
                      body="return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos])"),
         "first half"),
        ("every pair turned by t", _ROPE.format(angle="t * torch.ones_like(w)", pairs="x[0::2], x[1::2]",
                                                body=_INTERLEAVE),
         "every pair by t"),
        ("adds the sinusoidal encoding instead of rotating",
         "def rope(x, t):\n    d = x.shape[0]\n    j = torch.arange(d)\n    a = t / 10000 ** (2 * (j // 2) / d)\n"
         "    return x + torch.where(j % 2 == 0, a.sin(), a.cos())",
         "t - i only"),
        ("position t + 1 (positions counted from 1)",
         _ROPE.format(angle="(t + 1) * w", pairs="x[0::2], x[1::2]", body=_INTERLEAVE), "one step too far"),
        ("returns a pair count of values", _ROPE.format(angle="t * w", pairs="x[0::2], x[1::2]",
                                                        body="return x1 * cos - x2 * sin"),
         "shape"),
    ],
    "ex4_answer": [
        ("distance i - t", _REL + "    return (scores + bias[T - 1 + (i - t)]).softmax(-1)", "you used i - t"),
        ("bias added after the softmax", _REL + "    return scores.softmax(-1) + bias[T - 1 + (t - i)]",
         "before the softmax"),
        ("forgot the offset T - 1", _REL + "    return (scores + bias[t - i]).softmax(-1)", "offset"),
        ("no bias", _REL + "    return scores.softmax(-1)", "scores alone"),
        ("not renormalised", _REL + "    return scores.softmax(-1) * bias[T - 1 + (t - i)].exp()", "normalised"),
    ],
    "ex5_answer": [
        ("table as a Parameter", _module(store="self.table = torch.nn.Parameter(table.float())"),
         "register_buffer"),
        ("sine and cosine swapped", _module(even="cos", odd="sin"), "swapped"),
        ("returns the table alone", _module(forward="self.table[: x.shape[1]]"), "table alone"),
        ("odd d_model not handled", _module(odd_slice=""), "breaks for an odd one"),
        ("2i doubled", _module(exponent="2 * two_i / d_model"), "doubled"),
        ("column number used for i (a loop over columns)",
         "class SinusoidalPositionalEncoding(torch.nn.Module):\n"
         "    def __init__(self, d_model, max_len=512):\n"
         "        super().__init__()\n"
         "        table = torch.zeros(max_len, d_model)\n"
         "        for pos in range(max_len):\n"
         "            for j in range(d_model):\n"
         "                a = pos / 10000 ** (2 * j / d_model)\n"
         "                table[pos, j] = math.sin(a) if j % 2 == 0 else math.cos(a)\n"
         "        self.register_buffer('table', table)\n"
         "\n"
         "    def forward(self, x):\n"
         "        return x + self.table[: x.shape[1]]\n",
         "column number for i"),
        ("adds the whole table", _module(forward="x + self.table"), "raised"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("a numpy array", "import numpy as np\nw1 = 1 / 10000 ** (2 / 5)\n"
         "entries = np.array([np.sin(1), np.cos(2), np.sin(3 * w1), np.cos(4 * w1)])"),
        ("a float32 tensor", "w1 = 1 / 10000 ** (2 / 5)\n"
         "entries = torch.tensor([math.sin(1), math.cos(2), math.sin(3 * w1), math.cos(4 * w1)])"),
    ],
    "ex3_answer": [
        ("rotates x in place and returns it",
         "def rope(x, t):\n"
         "    d = x.shape[0]\n"
         "    omega = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)\n"
         "    cos, sin = (t * omega).cos().to(x.dtype), (t * omega).sin().to(x.dtype)\n"
         "    x1, x2 = x[0::2].clone(), x[1::2].clone()\n"
         "    x[0::2] = x1 * cos - x2 * sin\n"
         "    x[1::2] = x1 * sin + x2 * cos\n"
         "    return x\n"),
        ("float64 out", _ROPE.format(angle="t * w", pairs="x[0::2].double(), x[1::2].double()",
                                     body=_INTERLEAVE.replace("cos", "a.cos()").replace("sin", "a.sin()"))),
    ],
    "ex5_answer": [
        ("the table kept in float64", _module(store="self.register_buffer('table', table)")),
        ("x += table", _module(forward="x.add_(self.table[: x.shape[1]])")),
        ("x += table, then return x",
         _MODULE.format(**{**_GOOD, "forward": "x"}).replace("        return x\n",
                                                              "        x += self.table[: x.shape[1]]\n"
                                                              "        return x\n")),
    ],
}

# "table as a Parameter" (right output, the table registered as a trainable parameter) is scored: the hidden tests
# take one SGD step on the module's parameters and compare its next output with the fixed table's; the kernel's
# report (no trainable parameters, a buffer named table) stays beside it.
REPORTED_ONLY: set = set()
