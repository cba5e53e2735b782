"""Wrong answers for assignment 01, tokenization (see ``tests/bank/__init__.py``)."""

ASSIGNMENT = "01_tokenization"

# <sos> I ate an apple <eos>; you ate a banana (with <sos>, <eos>, and <unk> for banana).
EXPECTED = {"ex1_answer": [1, 8, 7, 5, 6, 2, 1, 10, 7, 4, 3, 2]}


def _by_hand(ids_apple="[1, 8, 7, 5, 6, 2]", ids_banana="[1, 10, 7, 4, 3, 2]", text="'you ate a pear'"):
    return (f"ids_apple = {ids_apple}\nids_banana = {ids_banana}\ntext = {text}\n"
            "answers = {'ids_apple': ids_apple, 'ids_banana': ids_banana, 'text': text}")


_COUNT = ("def count_pairs(words):\n    pairs = {}\n    for symbols, freq in words.items():\n"
          "        for pair in {pairs_of}:\n            pairs[{key}] = pairs.get({key}, 0) + {weight}\n"
          "    return pairs\n")


def _count(pairs_of="zip(symbols, symbols[1:])", key="pair", weight="freq"):
    return _COUNT.replace("{pairs_of}", pairs_of).replace("{key}", key).replace("{weight}", weight)


_MERGE = '''def merge_pair(pair, words):
    a, b = pair
    merged = {}
    for symbols, freq in words.items():
        out, i = [], 0
        while i < len(symbols):
            if {condition}:
                out.append({joined})
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        merged[tuple(out)] = {add}
    return merged
'''


def _merge(condition="i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b", joined="a + b",
           add="merged.get(tuple(out), 0) + freq"):
    return _MERGE.replace("{condition}", condition).replace("{joined}", joined).replace("{add}", add)


_TOKENIZER = '''SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]


class WordLevelTokenizer:
    def __init__(self, texts):
        words = [w for t in texts for w in t.split()]
        self.itos = {itos}
        self.stoi = {token: i for i, token in enumerate(self.itos)}

    def encode(self, text):
        return {encode}

    def decode(self, ids):
        return {decode}
'''
_ITOS = "SPECIALS + list(dict.fromkeys(words))"
_ENCODE = "[1] + [self.stoi.get(w, 3) for w in text.split()] + [2]"
_DECODE = "' '.join(self.itos[i] for i in ids if self.itos[i] not in SPECIALS)"


def _tokenizer(itos=_ITOS, encode=_ENCODE, decode=_DECODE):
    return _TOKENIZER.replace("{itos}", itos).replace("{encode}", encode).replace("{decode}", decode)


_BYTES = """import re

PIECE = re.compile(r\"\"\"'s|'t|'re|'ve|'m|'ll|'d| ?[^\\W\\d_]+| ?\\d+| ?(?:[^\\s\\w]|_)+|\\s+(?!\\S)|\\s+\"\"\")


def byte_tokens(text, merges):
{table}
    ranks = {tuple(pair): rank for rank, pair in enumerate(merges)}
    tokens = []
    for piece in {pieces}:
        symbols = {symbols}
{merge}
        tokens += symbols
    return {out}
"""
_TABLE = """    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    byte_char, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            byte_char[byte] = chr(byte)
        else:
            byte_char[byte] = {other}
            extra += 1"""
_LOWEST_RANK = """        while len(symbols) > 1:
            rank, i = min((ranks.get(p, len(ranks)), i) for i, p in enumerate(zip(symbols, symbols[1:])))
            if rank == len(ranks):
                break
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]"""
_LEFTMOST_KNOWN = """        i = 0
        while i + 1 < len(symbols):
            if (symbols[i], symbols[i + 1]) in ranks:
                symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
                i = 0
            else:
                i += 1"""
_FIRST_ONLY = """        for a, b in merges:
            for i in range(len(symbols) - 1):
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i:i + 2] = [a + b]
                    break"""
_LATEST_FIRST = """        while True:
            found = [(ranks[p], i) for i, p in enumerate(zip(symbols, symbols[1:])) if p in ranks]
            if not found:
                break
            rank, i = max(found)
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]"""
_ALL_AT_ONCE = """        while len(symbols) > 1:
            pair = min(zip(symbols, symbols[1:]), key=lambda p: ranks.get(p, float("inf")))
            if pair not in ranks:
                break
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                    out.append(pair[0] + pair[1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            symbols = out"""
_IN_ORDER = """        for a, b in merges:
            i = 0
            while i + 1 < len(symbols):
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i:i + 2] = [a + b]
                i += 1"""
_GPT2_TABLE = """    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(2 ** 8):
        if b not in bs:
            bs.append(b)
            cs.append(2 ** 8 + n)
            n += 1
    byte_char = dict(zip(bs, map(chr, cs)))"""


def _bytes(other="chr(256 + extra)", pieces="PIECE.findall(text)", symbols="[byte_char[b] for b in piece.encode('utf-8')]",
           merge=_LOWEST_RANK, out="tokens", table=None):
    table = _TABLE.replace("{other}", other) if table is None else table
    return (_BYTES.replace("{table}", table).replace("{pieces}", pieces).replace("{symbols}", symbols)
            .replace("{merge}", merge).replace("{out}", out))


WRONG = {
    "ex1_answer": [
        ("no <sos>/<eos>", _by_hand(ids_apple="[8, 7, 5, 6]"), "starts with <sos>"),
        ("ids from 1", _by_hand(ids_apple="[2, 9, 8, 6, 7, 3]"), "count from 0"),
        ("ids in the order of the sentence", _by_hand(ids_apple="[1, 4, 5, 6, 7, 2]"), "vocabulary given above"),
        ("<sos> and <eos> swapped", _by_hand(ids_apple="[2, 8, 7, 5, 6, 1]"), "start of sequence"),
        ("unknown word left out", _by_hand(ids_banana="[1, 10, 7, 4, 2]"), "still takes its place"),
        ("unknown word as <pad>", _by_hand(ids_banana="[1, 10, 7, 4, 0, 2]"), "only fills up"),
        ("banana without <sos>/<eos>", _by_hand(ids_banana="[10, 7, 4, 3]"), "starts with <sos>"),
        ("specials kept in the text", _by_hand(text="'<sos> you ate a pear <eos> <pad> <pad>'"), "drops the special"),
        ("no spaces", _by_hand(text="'youateapear'"), "single spaces"),
        ("a wrong word", _by_hand(text="'you ate an pear'"), None),
        ("text as a list", _by_hand(text="['you', 'ate', 'a', 'pear']"), "expected a str"),
        ("a list instead of the dict", "answers = [[1, 8, 7, 5, 6, 2], [1, 10, 7, 4, 3, 2], 'you ate a pear']",
         "expected a dict"),
    ],
    "ex2_answer": [
        ("not weighted by frequency", _count(weight="1"), "weight every pair"),
        ("each pair once per word", _count(pairs_of="set(zip(symbols, symbols[1:]))"), "counts twice"),
        ("pairs of characters", _count(pairs_of="zip(''.join(symbols), ''.join(symbols)[1:])"),
         "not of characters"),
        ("joined keys", _count(key="pair[0] + pair[1]"), "tuple (a, b)"),
        ("every pair, not only neighbours",
         _count(pairs_of="((symbols[i], symbols[j]) for i in range(len(symbols)) for j in range(i + 1, len(symbols)))"),
         "should not be there"),
        ("a list of pairs", "def count_pairs(words):\n    return [p for s in words for p in zip(s, s[1:])]",
         "expected a dict"),
        ("empties the input",
         "def count_pairs(words):\n    pairs = {}\n    while words:\n        symbols, freq = words.popitem()\n"
         "        for pair in zip(symbols, symbols[1:]):\n            pairs[pair] = pairs.get(pair, 0) + freq\n"
         "    return pairs", "changes its input `words` in place"),
    ],
    "ex3_answer": [
        ("only the first occurrence",
         _merge(condition="i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b and a + b not in out"),
         "every occurrence"),
        ("right to left",
         "def merge_pair(pair, words):\n    a, b = pair\n    merged = {}\n    for symbols, freq in words.items():\n"
         "        out, i = [], len(symbols) - 1\n        while i >= 0:\n"
         "            if i > 0 and symbols[i - 1] == a and symbols[i] == b:\n"
         "                out.insert(0, a + b)\n                i -= 2\n            else:\n"
         "                out.insert(0, symbols[i])\n                i -= 1\n"
         "        merged[tuple(out)] = merged.get(tuple(out), 0) + freq\n    return merged\n",
         "left to right"),
        ("string replacement",
         "def merge_pair(pair, words):\n    a, b = pair\n    merged = {}\n    for symbols, freq in words.items():\n"
         "        key = tuple(' '.join(symbols).replace(a + ' ' + b, a + b).split(' '))\n"
         "        merged[key] = merged.get(key, 0) + freq\n    return merged\n",
         "whole symbols"),
        ("frequencies overwritten", _merge(add="freq"), "add their frequencies"),
        ("joined with a space", _merge(joined="a + ' ' + b"), "glued together"),
        ("nothing merged", "def merge_pair(pair, words):\n    return dict(words)", "nothing was merged"),
        ("words as strings",
         "def merge_pair(pair, words):\n    a, b = pair\n"
         "    return {' '.join(s).replace(a + ' ' + b, a + b): f for s, f in words.items()}",
         "tuples of symbols"),
        ("changes the input",
         "def merge_pair(pair, words):\n    a, b = pair\n    for symbols in list(words):\n"
         "        out, i = [], 0\n        while i < len(symbols):\n"
         "            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:\n"
         "                out.append(a + b)\n                i += 2\n            else:\n"
         "                out.append(symbols[i])\n                i += 1\n"
         "        freq = words.pop(symbols)\n        words[tuple(out)] = words.get(tuple(out), 0) + freq\n"
         "    return words\n",
         "changes its input `words` in place"),
    ],
    "ex4_answer": [
        ("no special tokens", _tokenizer(itos="list(dict.fromkeys(words))"), "starts with the four special"),
        ("special tokens last", _tokenizer(itos="list(dict.fromkeys(words)) + SPECIALS"), "come first"),
        ("sorted vocabulary", _tokenizer(itos="SPECIALS + sorted(set(words))"), "not sorted"),
        ("duplicates", _tokenizer(itos="SPECIALS + words"), "once"),
        ("no <sos>/<eos>", _tokenizer(encode="[self.stoi.get(w, 3) for w in text.split()]"), "adds <sos>"),
        ("KeyError for unknown words", _tokenizer(encode="[1] + [self.stoi[w] for w in text.split()] + [2]"),
         "must become <unk>"),
        ("unknown words left out",
         _tokenizer(encode="[1] + [self.stoi[w] for w in text.split() if w in self.stoi] + [2]"),
         "still takes its place"),
        ("unknown words as <pad>", _tokenizer(encode="[1] + [self.stoi.get(w, 0) for w in text.split()] + [2]"),
         "not <pad>"),
        ("decode keeps the specials", _tokenizer(decode="' '.join(self.itos[i] for i in ids)"),
         "skips the four special"),
        ("decode keeps <unk>", _tokenizer(decode="' '.join(self.itos[i] for i in ids if i not in (0, 1, 2))"),
         "<unk> included"),
        ("decode without spaces", _tokenizer(decode="''.join(self.itos[i] for i in ids if i > 3)"),
         "single spaces"),
        ("no stoi",
         "class WordLevelTokenizer:\n    def __init__(self, texts):\n"
         "        self.itos = ['<pad>', '<sos>', '<eos>', '<unk>']\n", "missing the attribute stoi"),
        ("encode returns a tensor",
         _tokenizer(encode="torch.tensor([1] + [self.stoi.get(w, 3) for w in text.split()] + [2])"),
         "expected a list of int ids"),
    ],
    "ex5_answer": [
        ("no byte map", _bytes(symbols="list(piece)"), "the space becomes 'Ġ'"),
        ("characters, not bytes", _bytes(symbols="[byte_char.get(ord(c), c) for c in piece]"), "not its characters"),
        ("bytes read as Latin-1", _bytes(symbols="list(piece.encode('utf-8').decode('latin-1'))"),
         "do not stand for themselves"),
        ("chr(256 + byte)", _bytes(other="chr(256 + byte)"), "counted among"),
        ("the counter never counts up", _bytes(table=_TABLE.replace("{other}", "chr(256)").replace(
            "            extra += 1", "")), None),
        ("merges across pieces", _bytes(pieces="[text]"), "never cross"),
        ("split on white space", _bytes(pieces="text.split()"), "not text.split()"),
        ("order of appearance", _bytes(merge=_LEFTMOST_KNOWN), "the one learned first"),
        ("first occurrence only", _bytes(merge=_FIRST_ONLY), "not only the first"),
        ("latest merge first", _bytes(merge=_LATEST_FIRST), None),
        ("one str", _bytes(out="''.join(tokens)"), "expected a list of str"),
    ],
}

RIGHT = {
    "ex5_answer": [
        ("GPT-2's loop: every occurrence of the lowest-ranked pair at once", _bytes(merge=_ALL_AT_ONCE)),
        ("the merges one after another, in the order they were learned", _bytes(merge=_IN_ORDER)),
        ("GPT-2's bytes_to_unicode", _bytes(table=_GPT2_TABLE)),
    ],
    "ex1_answer": [
        ("numpy ids", "import numpy as np\n"
         "answers = {'ids_apple': [np.int64(i) for i in (1, 8, 7, 5, 6, 2)],\n"
         "           'ids_banana': list(np.array([1, 10, 7, 4, 3, 2])), 'text': 'you ate a pear'}"),
    ],
}

# Wrong only in changing the caller's dict ("empties the input", "changes the input"): the hidden tests call the
# function a second time on the very same dict and score that answer, and the input after the call too (the text says
# it is not changed). The visible check rejects them too.
REPORTED_ONLY: set = set()
