"""Wrong answers for assignment 09, the output head (see ``tests/bank/__init__.py``)."""

import math

ASSIGNMENT = "09_output_head"

# Exercise 1 by hand: logits [1, 2, 0, -0.5] over [einen, Brot, gegessen, <eos>]; the right word is "einen".
_Z = [1.0, 2.0, 0.0, -0.5]
_P = [math.exp(z) / sum(math.exp(x) for x in _Z) for z in _Z]
EXPECTED = {"ex1_answer": [*_P, -math.log(_P[0])]}

_HAND = "\nhand = {'probs': probs, 'word': word, 'loss': loss}"
_SOFTMAX = "import math\nz = [1.0, 2.0, 0.0, -0.5]\ns = sum(math.exp(x) for x in z)\nprobs = [math.exp(x) / s for x in z]\n"

_LOSS_HEAD = "def masked_cross_entropy(logits, labels, pad_id):\n"
_NLL = "    nll = -logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]\n"

_GREEDY_HEAD = "def greedy_decode(next_logits, prefix, eos_id, max_new_tokens):\n"

_HEAD_CLASS = ("import math\nclass OutputHead(torch.nn.Module):\n"
               "    def __init__(self, d_model, vocab_size, embedding=None):\n        super().__init__()\n")
_OWN = "torch.nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))"
_FORWARD = "    def forward(self, h):\n        return h @ self.weight.T\n"

WRONG = {
    "ex1_answer": [
        ("exponentials not normalised",
         "import math\nz = [1.0, 2.0, 0.0, -0.5]\nprobs = [math.exp(x) for x in z]\nword = 'Brot'\n"
         "loss = -math.log(math.exp(1.0) / sum(probs))" + _HAND, "divide each by their sum"),
        ("logits normalised without exp",
         "import math\nz = [1.0, 2.0, 0.0, -0.5]\nprobs = [x / sum(z) for x in z]\nword = 'Brot'\n"
         "loss = 1.4608" + _HAND, "exponentiates first"),
        ("log-probabilities given as probs",
         "import math\nz = [1.0, 2.0, 0.0, -0.5]\nlse = math.log(sum(math.exp(x) for x in z))\n"
         "probs = [x - lse for x in z]\nword = 'Brot'\nloss = lse - 1.0" + _HAND, "log-probabilities"),
        ("probabilities sorted",
         _SOFTMAX + "loss = -math.log(probs[0])\nprobs = sorted(probs, reverse=True)\nword = 'Brot'" + _HAND,
         "vocabulary order"),
        ("the index instead of the word", _SOFTMAX + "word = 1\nloss = -math.log(probs[0])" + _HAND, "index"),
        ("the right word instead of the argmax", _SOFTMAX + "word = 'einen'\nloss = -math.log(probs[0])" + _HAND,
         "highest probability"),
        ("a word outside the vocabulary", _SOFTMAX + "word = 'Apfel'\nloss = -math.log(probs[0])" + _HAND,
         "one of the four words"),
        ("loss of the predicted word", _SOFTMAX + "word = 'Brot'\nloss = -math.log(probs[1])" + _HAND,
         "the word the model picks"),
        ("no minus sign", _SOFTMAX + "word = 'Brot'\nloss = math.log(probs[0])" + _HAND, "minus sign"),
        ("log base 10", _SOFTMAX + "word = 'Brot'\nloss = -math.log10(probs[0])" + _HAND, "natural logarithm"),
        ("one minus p", _SOFTMAX + "word = 'Brot'\nloss = 1 - probs[0]" + _HAND, "1 - p"),
        ("minus the logit", _SOFTMAX + "word = 'Brot'\nloss = -1.0" + _HAND, "-z_y"),
        ("a guess", "probs = [0.25, 0.25, 0.25, 0.25]\nword = 'Brot'\nloss = 1.0" + _HAND, None),
        ("three probabilities", _SOFTMAX + "probs = probs[:3]\nword = 'Brot'\nloss = -math.log(probs[0])" + _HAND,
         "shape"),
        ("not the dict", _SOFTMAX + "word = 'Brot'\nloss = -math.log(probs[0])\nhand = (probs, word, loss)",
         "dict"),
    ],
    "ex2_answer": [
        ("padding counted", _LOSS_HEAD + _NLL + "    return nll.mean()", "padding"),
        ("the pad labels set to 0 in the caller's labels (labels[~real] = 0)",
         _LOSS_HEAD + "    real = labels != pad_id\n    labels[~real] = 0\n" + _NLL
         + "    return (nll * real).sum() / real.sum()",
         "changes its input `labels` in place; the exercise says the inputs are not changed"),
        ("mean per sentence, then over the batch",
         _LOSS_HEAD + _NLL + "    real = labels != pad_id\n    return ((nll * real).sum(1) / real.sum(1)).mean()",
         "each sentence's mean"),
        ("softmax where log_softmax belongs",
         _LOSS_HEAD + "    nll = -logits.softmax(-1).gather(-1, labels[..., None])[..., 0]\n"
         "    return nll[labels != pad_id].mean()", "-log p(label)"),
        ("divided by every position",
         _LOSS_HEAD + _NLL + "    return (nll * (labels != pad_id)).sum() / nll.numel()", "number of real labels"),
        ("the sum", _LOSS_HEAD + _NLL + "    return nll[labels != pad_id].sum()", "sum"),
        ("no minus sign",
         _LOSS_HEAD + "    lp = logits.log_softmax(-1).gather(-1, labels[..., None])[..., 0]\n"
         "    return lp[labels != pad_id].mean()", "minus sign"),
        ("log-softmax over the positions",
         _LOSS_HEAD + "    nll = -logits.log_softmax(1).gather(-1, labels[..., None])[..., 0]\n"
         "    return nll[labels != pad_id].mean()", "wrong dimension"),
        ("logits used as log-probabilities",
         _LOSS_HEAD + "    nll = -logits.gather(-1, labels[..., None])[..., 0]\n"
         "    return nll[labels != pad_id].mean()", "log_softmax"),
        ("pad id hard-coded as 0", _LOSS_HEAD + _NLL + "    return nll[labels != 0].mean()", "hard-coded"),
        ("returns a float", _LOSS_HEAD + _NLL + "    return nll[labels != pad_id].mean().item()", "connected"),
        ("rebuilt as a new tensor",
         _LOSS_HEAD + _NLL + "    return torch.tensor(nll[labels != pad_id].mean().item())", "connected"),
        ("probabilities instead of logs",
         _LOSS_HEAD + "    p = logits.softmax(-1).gather(-1, labels[..., None])[..., 0]\n"
         "    return -p[labels != pad_id].mean()", None),
        ("wrong shape", _LOSS_HEAD + _NLL + "    return nll[labels != pad_id].mean(dim=0, keepdim=True)", "shape"),
    ],
    "ex3_answer": [
        ("does not stop at eos",
         _GREEDY_HEAD + "    ids = list(prefix)\n    for _ in range(max_new_tokens):\n"
         "        ids.append(int(next_logits(ids).argmax()))\n    return ids", "stop as soon as"),
        ("eos left out",
         _GREEDY_HEAD + "    ids = list(prefix)\n    for _ in range(max_new_tokens):\n"
         "        nxt = int(next_logits(ids).argmax())\n        if nxt == eos_id:\n            break\n"
         "        ids.append(nxt)\n    return ids", "eos_id is missing"),
        ("one token too few",
         _GREEDY_HEAD + "    ids = list(prefix)\n    for _ in range(max_new_tokens - 1):\n"
         "        nxt = int(next_logits(ids).argmax())\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids", "one token too few"),
        ("one token too many",
         _GREEDY_HEAD + "    ids = list(prefix)\n    while len(ids) - len(prefix) <= max_new_tokens:\n"
         "        nxt = int(next_logits(ids).argmax())\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids", "one token too many"),
        ("max length counts the prefix",
         _GREEDY_HEAD + "    ids = list(prefix)\n    while len(ids) < max_new_tokens:\n"
         "        nxt = int(next_logits(ids).argmax())\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids", "not the prefix"),
        ("output not fed back",
         _GREEDY_HEAD + "    ids = list(prefix)\n    for _ in range(max_new_tokens):\n"
         "        nxt = int(next_logits(prefix).argmax())\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids", "feed the growing sequence"),
        ("only the new tokens",
         _GREEDY_HEAD + "    ids, new = list(prefix), []\n    for _ in range(max_new_tokens):\n"
         "        nxt = int(next_logits(ids).argmax())\n        ids.append(nxt)\n        new.append(nxt)\n"
         "        if nxt == eos_id:\n            break\n    return new", "prefix followed by"),
        ("argmin",
         _GREEDY_HEAD + "    ids = list(prefix)\n    for _ in range(max_new_tokens):\n"
         "        nxt = int(next_logits(ids).argmin())\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids", "largest logit"),
        ("changes the caller's prefix",
         _GREEDY_HEAD + "    ids = prefix\n    for _ in range(max_new_tokens):\n"
         "        nxt = int(next_logits(ids).argmax())\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids", "changes its input `prefix` in place"),
        ("no maximum length",
         _GREEDY_HEAD + "    ids = list(prefix)\n    while True:\n        nxt = int(next_logits(ids).argmax())\n"
         "        ids.append(nxt)\n        if nxt == eos_id:\n            return ids", "does your loop stop"),
        ("two calls per token",
         _GREEDY_HEAD + "    ids = list(prefix)\n    for _ in range(max_new_tokens):\n"
         "        if next_logits(ids).max() > 1e9:\n            break\n"
         "        nxt = int(next_logits(ids).argmax())\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids", "once per new token"),
        ("only the last token passed",
         _GREEDY_HEAD + "    ids = list(prefix)\n    for _ in range(max_new_tokens):\n"
         "        nxt = int(next_logits(ids[-1:]).argmax())\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids", "whole sequence"),
        ("returns a string", _GREEDY_HEAD + "    return 'Ich habe einen Apfel gegessen'", None),
    ],
    "ex4_answer": [
        ("a copy instead of the Parameter",
         _HEAD_CLASS + "        if embedding is not None:\n"
         "            self.weight = torch.nn.Parameter(embedding.weight.detach().clone())\n"
         "        else:\n            self.weight = " + _OWN + "\n" + _FORWARD, "this is a copy"),
        ("a new Parameter around the embedding's weight",
         _HEAD_CLASS + "        if embedding is not None:\n"
         "            self.weight = torch.nn.Parameter(embedding.weight)\n"
         "        else:\n            self.weight = " + _OWN + "\n" + _FORWARD, "this is a copy"),
        ("the embedding is ignored",
         _HEAD_CLASS + "        self.weight = " + _OWN + "\n" + _FORWARD, "embedding.weight itself"),
        ("a plain tensor, not a Parameter",
         _HEAD_CLASS + "        if embedding is not None:\n            self.weight = embedding.weight\n"
         "        else:\n            self.weight = torch.randn(vocab_size, d_model) / math.sqrt(d_model)\n"
         + _FORWARD, "torch.nn.Parameter"),
        ("entries of size 1",
         _HEAD_CLASS + "        if embedding is not None:\n            self.weight = embedding.weight\n"
         "        else:\n            self.weight = torch.nn.Parameter(torch.randn(vocab_size, d_model))\n"
         + _FORWARD, "1/sqrt(d_model)"),
        ("stored transposed",
         _HEAD_CLASS + "        if embedding is not None:\n            self.weight = embedding.weight\n"
         "        else:\n            self.weight = torch.nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))\n"
         "    def forward(self, h):\n        return h @ self.weight\n", "transposed"),
        ("tied as E^T",
         _HEAD_CLASS + "        if embedding is not None:\n            self.weight = embedding.weight.T\n"
         "        else:\n            self.weight = torch.nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))\n"
         "    def forward(self, h):\n        return h @ self.weight\n", "transposed"),
        ("softmax in forward",
         _HEAD_CLASS + "        if embedding is not None:\n            self.weight = embedding.weight\n"
         "        else:\n            self.weight = " + _OWN + "\n"
         "    def forward(self, h):\n        return (h @ self.weight.T).softmax(dim=-1)\n", "probabilities"),
        ("scaled by sqrt(d_model)",
         _HEAD_CLASS + "        if embedding is not None:\n            self.weight = embedding.weight\n"
         "        else:\n            self.weight = " + _OWN + "\n"
         "        self.d = d_model\n"
         "    def forward(self, h):\n        return h @ self.weight.T * math.sqrt(self.d)\n", "input embedding"),
        ("an own matrix kept besides the tied one",
         _HEAD_CLASS + "        self.own = " + _OWN + "\n"
         "        self.weight = embedding.weight if embedding is not None else self.own\n" + _FORWARD,
         "parameters of its own"),
        ("a bias added",
         _HEAD_CLASS + "        self.weight = embedding.weight if embedding is not None else " + _OWN + "\n"
         "        self.bias = torch.nn.Parameter(torch.full((vocab_size,), 0.1))\n"
         "    def forward(self, h):\n        return h @ self.weight.T + self.bias\n", None),
        ("weight under another name",
         _HEAD_CLASS + "        self.W = embedding.weight if embedding is not None else " + _OWN + "\n"
         "    def forward(self, h):\n        return h @ self.W.T\n", "self.weight"),
        ("not a module", "class OutputHead:\n    def __init__(self, d_model, vocab_size, embedding=None):\n"
         "        self.weight = None\n", "nn.Module"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("numpy", "import numpy as np\nz = np.array([1.0, 2.0, 0.0, -0.5])\nprobs = np.exp(z) / np.exp(z).sum()\n"
         "word = ['einen', 'Brot', 'gegessen', '<eos>'][int(np.argmax(probs))]\nloss = -np.log(probs[0])" + _HAND),
        ("torch", "z = torch.tensor([1.0, 2.0, 0.0, -0.5])\nprobs = z.exp() / z.exp().sum()\n"
         "word = ['einen', 'Brot', 'gegessen', '<eos>'][probs.argmax()]\nloss = -probs[0].log()" + _HAND),
    ],
    "ex3_answer": [
        ("ids as 0-d tensors", _GREEDY_HEAD + "    ids = list(prefix)\n    for _ in range(max_new_tokens):\n"
         "        nxt = next_logits(ids).argmax()\n        ids.append(nxt)\n        if nxt == eos_id:\n"
         "            break\n    return ids\n"),
        ("a tensor of ids", _GREEDY_HEAD + "    ids = torch.tensor(prefix)\n    for _ in range(max_new_tokens):\n"
         "        nxt = next_logits(ids.tolist()).argmax()\n        ids = torch.cat([ids, nxt[None]])\n"
         "        if nxt == eos_id:\n            break\n    return ids\n"),
    ],
}

# Scored now: "changes the caller's prefix" by a second call on the very same prefix list and by the prefix after the
# call (the text says it is not changed); "two calls per token" by a next_logits whose logits depend on how often it
# was called; "entries of size 1" by the size of the logits of the head as built; "an own matrix kept besides the tied
# one" by the tensors of the tied head's state dict after a training step (each must be the embedding's matrix).
REPORTED_ONLY: set = set()
