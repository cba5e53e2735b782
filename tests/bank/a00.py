"""Wrong answers for assignment 00, why Transformers (see ``tests/bank/__init__.py``)."""

ASSIGNMENT = "00_why_transformers"


def _counts(rnn_steps="21", attention_steps="1", rnn_path="20", attention_path="1", survives="0.9 ** 20"):
    return (f"rnn_steps = {rnn_steps}\nattention_steps = {attention_steps}\nrnn_path = {rnn_path}\n"
            f"attention_path = {attention_path}\nsurvives = {survives}\n"
            "answers = {'rnn_steps': rnn_steps, 'attention_steps': attention_steps, 'rnn_path': rnn_path,\n"
            "           'attention_path': attention_path, 'survives': survives}")


# 21 words: 21 steps and 20 hops for the RNN, 1 and 1 for self-attention; 0.9 ** 20 survives.
EXPECTED = {"ex1_answer": [21, 1, 20, 1, 0.9 ** 20]}


def _rnn(init_extra="", step="torch.tanh(x[:, t] @ self.weight_ih.T + self.bias_ih + h @ self.weight_hh.T + self.bias_hh)",
         keep="h", ret="torch.stack(states, dim=1)", shapes=("(hidden_size, input_size)", "(hidden_size, hidden_size)"),
         param="torch.nn.Parameter", time="range(x.shape[1])", read="x[:, t]"):
    return (
        "class ElmanRNN(torch.nn.Module):\n"
        "    def __init__(self, input_size, hidden_size):\n"
        "        super().__init__()\n"
        f"        self.weight_ih = {param}(torch.randn{shapes[0]})\n"
        f"        self.weight_hh = {param}(torch.randn{shapes[1]})\n"
        f"        self.bias_ih = {param}(torch.zeros(hidden_size))\n"
        f"        self.bias_hh = {param}(torch.zeros(hidden_size))\n"
        f"{init_extra}"
        "    def forward(self, x):\n"
        "        h = torch.zeros(x.shape[0], self.weight_hh.shape[0])\n"
        "        states = []\n"
        f"        for t in {time}:\n"
        f"            new = {step.replace('x[:, t]', read)}\n"
        "            states.append(" + ("h" if keep == "old" else "new") + ")\n"
        "            h = new\n"
        f"        return {ret}\n"
    )


WRONG = {
    "ex1_answer": [
        ("RNN steps off by one", _counts(rnn_steps="20"), "h_1 included"),
        ("attention steps = n", _counts(attention_steps="21"), "at the same time"),
        ("RNN path = n", _counts(rnn_path="21"), "off by one"),
        ("attention path = n - 1", _counts(attention_path="20"), "one hop"),
        ("survives: one factor too many", _counts(survives="0.9 ** 21"), "one multiplication per hop"),
        ("survives: multiplied by the hops", _counts(survives="0.9 * 20"), "a power"),
        ("survives: the fraction lost", _counts(survives="1 - 0.9 ** 20"), "lost"),
        ("survives: a percentage", _counts(survives="100 * 0.9 ** 20"), "percentage"),
        ("survives: losses added up", _counts(survives="1 - 0.1 * 20"), "compound"),
        ("a list instead of the dict", "answers = [21, 1, 20, 1, 0.12]", "expected a dict"),
        ("a key missing", "answers = {'rnn_steps': 21, 'attention_steps': 1}", "missing the key"),
        ("a string for a number", _counts(rnn_path="'20'"), "expected a number"),
        ("all guessed", _counts("10", "10", "10", "10", "0.5"), None),
    ],
    "ex2_answer": [
        ("scaled by sqrt(d)",
         "import math\ndef attend(query, keys, values):\n"
         "    return ((keys @ query) / math.sqrt(query.shape[0])).softmax(dim=0) @ values",
         "sqrt(d_k)"),
        ("returned the weights", "def attend(query, keys, values):\n    return (keys @ query).softmax(dim=0)",
         "returned the weights"),
        ("no softmax", "def attend(query, keys, values):\n    return (keys @ query) @ values", "softmax first"),
        ("normalised by the sum",
         "def attend(query, keys, values):\n    s = keys @ query\n    return (s / s.sum()) @ values",
         "exponentiate"),
        ("summed the keys", "def attend(query, keys, values):\n    return (keys @ query).softmax(dim=0) @ keys",
         "not the keys"),
        ("hard lookup", "def attend(query, keys, values):\n    return values[(keys @ query).argmax()]",
         "hard lookup"),
        ("plain average", "def attend(query, keys, values):\n    return values.mean(dim=0)", "plain average"),
        ("exp without the max: overflows",
         "def attend(query, keys, values):\n    e = (keys @ query).exp()\n    return (e / e.sum()) @ values",
         "overflows"),
        ("softmax over the wrong shape",
         "def attend(query, keys, values):\n    return (query @ keys.T).softmax(dim=0) @ values.T", None),
        ("crashes", "def attend(query, keys, values):\n    return query @ values", "raised"),
    ],
    "ex3_answer": [
        ("no tanh", _rnn(step="x[:, t] @ self.weight_ih.T + self.bias_ih + h @ self.weight_hh.T + self.bias_hh"),
         "no tanh"),
        ("no recurrence", _rnn(step="torch.tanh(x[:, t] @ self.weight_ih.T + self.bias_ih + self.bias_hh)"),
         "do not depend on each other"),
        ("keeps the state from before the step", _rnn(keep="old"), "not the state h_(t-1)"),
        ("time backwards", _rnn(time="range(x.shape[1] - 1, -1, -1)",
                                ret="torch.stack(states[::-1], dim=1)"), "backwards"),
        ("time along dimension 0", _rnn(time="range(x.shape[0])", read="x[t]",
                                        ret="torch.stack(states, dim=0)").replace(
                                            "torch.zeros(x.shape[0],", "torch.zeros(x.shape[1],"),
         "dimension 1"),
        ("one bias missing", _rnn(step="torch.tanh(x[:, t] @ self.weight_ih.T + self.bias_ih + h @ self.weight_hh.T)"),
         "bias_hh is missing"),
        ("only the last state", _rnn(ret="h"), "only the last hidden state"),
        ("returns a pair like nn.RNN", _rnn(ret="torch.stack(states, dim=1), h"), "returned a tuple"),
        ("weights stored transposed", _rnn(shapes=("(input_size, hidden_size)", "(hidden_size, hidden_size)")),
         "store it the same way"),
        ("plain tensors, not parameters", _rnn(param=""), "not registered"),
        ("not a module",
         "class ElmanRNN:\n    def __init__(self, input_size, hidden_size):\n        pass\n", "nn.Module"),
        ("output detached", _rnn(ret="torch.stack(states, dim=1).detach()"), "autograd"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("numpy numbers",
         "import numpy as np\n"
         "answers = {'rnn_steps': np.int64(21), 'attention_steps': np.int64(1), 'rnn_path': np.int64(20),\n"
         "           'attention_path': np.int64(1), 'survives': np.float32(0.9) ** 20}"),
        ("tensors and 0-d arrays",
         "import numpy as np\n"
         "answers = {'rnn_steps': torch.tensor(21), 'attention_steps': np.array(1), 'rnn_path': 20.0,\n"
         "           'attention_path': torch.tensor(1.0), 'survives': torch.tensor(0.9, dtype=torch.float64) ** 20}"),
    ],
}
