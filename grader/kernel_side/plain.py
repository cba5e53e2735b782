"""Plain data between the grader and a kernel: JSON with arrays as ``.npy`` files, never a pickle.

The same module serves both sides (it imports only the standard library, numpy and torch).
``encode`` turns tensors, arrays, numbers, strings, lists, tuples and dicts into a JSON tree whose
arrays are files ``<n>.npy`` in ``folder``; ``decode`` reads it back under a :class:`Budget`,
refusing anything that is not plain data (a pickle, a link, a pipe, an object array) and anything
that would cost the reader more than the budget: bytes of arrays (every reference counted, so one
file named a thousand times costs a thousand times), values, depth, keys of one dict. Arrays are
never dict keys.

No size is written here and none is a default: every call names its budget. The trusted side's come from
``grader/limits.py``; in the kernel, ``runner.answer`` is handed its budgets by the code the grader runs there,
since this folder cannot import the grader.
"""

from __future__ import annotations

import json
import os
import re
import stat

import numpy as np

ARRAY_KINDS = "biuf"        # bool, int, unsigned, float: nothing that can hold an object
TORCH_DTYPES = {f"torch.{n}": n for n in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                                           "float32", "float64", "complex64", "complex128")}


class Budget:
    """What one decode may cost: values, nesting depth, keys of one dict, bytes of arrays (as read and as
    converted to the tensor's dtype), dimensions of one array, numbers in arrays (what a judge may turn into
    Python numbers); and the largest array file, JSON file and ``.npy`` header it opens. Every size is the
    caller's (``grader.limits.REPLY_BUDGET`` and ``REQUEST_BUDGET`` name them all)."""

    def __init__(self, *, items, depth, keys, array_bytes, dims, elements, file_bytes, json_bytes, header_bytes):
        self.items, self.depth, self.keys, self.array_bytes, self.dims = items, depth, keys, array_bytes, dims
        self.elements, self.file_bytes, self.json_bytes = elements, file_bytes, json_bytes
        self.header_bytes = header_bytes

    def take(self, what: str, n: int = 1) -> None:
        left = getattr(self, what) - n
        if left < 0:
            raise ValueError(f"reply: over its budget of {what}")
        setattr(self, what, left)


def encode(obj, folder, max_items: int, _count=None):
    """A JSON-able tree for ``obj``; its arrays are written to ``folder`` as ``<n>.npy``. At most ``max_items``
    values (the reader's budget), since the reader would refuse more."""
    count = [0] if _count is None else _count
    count[0] += 1
    if count[0] > max_items:  # more would be refused by the reader
        raise ValueError(f"reply: expected at most {max_items} values, got more")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, float)) and type(obj) in (int, float):
        return obj
    kind = type(obj).__module__.split(".")[0]
    if kind == "torch" and hasattr(obj, "detach"):  # a tensor
        import torch

        dtype = str(obj.dtype)
        t = obj.detach().cpu()
        if t.is_complex() or dtype in ("torch.bfloat16", "torch.float16"):
            t = t.to(torch.complex128 if t.is_complex() else torch.float32)
        arr, tensor = np.array(t.resolve_conj().resolve_neg().numpy(), order="C"), dtype
    elif isinstance(obj, np.ndarray):
        arr, tensor = np.array(obj, order="C"), None
    elif isinstance(obj, np.generic):
        return {"scalar": obj.item(), "dtype": str(obj.dtype)}
    elif isinstance(obj, list):
        return [encode(x, folder, max_items, count) for x in obj]
    elif isinstance(obj, tuple):
        return {"tuple": [encode(x, folder, max_items, count) for x in obj]}
    elif isinstance(obj, dict):
        if all(type(k) is str for k in obj):
            return {"dict": {k: encode(v, folder, max_items, count) for k, v in obj.items()}}
        return {"items": [[encode(k, folder, max_items, count), encode(v, folder, max_items, count)]
                          for k, v in obj.items()]}
    else:
        return {"object": type(obj).__name__[:100]}
    if arr.dtype.kind not in ARRAY_KINDS + "c":
        return {"object": f"array of {arr.dtype}"}
    name = f"{count[0]}.npy"
    np.save(os.path.join(folder, name), arr, allow_pickle=False)
    return {"array": name, "torch": tensor}


def open_under(root, rel, limit: int):
    """The regular file ``root/rel``, opened for reading without following a link anywhere below
    ``root`` and without waiting on a pipe; at most ``limit`` bytes. ``root`` is trusted, ``rel`` is not."""
    parts = [p for p in str(rel).split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"expected a file below the folder, got {str(rel)[:60]!r}")
    fd = os.open(str(root), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        handle = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    f = os.fdopen(handle, "rb")
    info = os.fstat(f.fileno())
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        f.close()
        raise ValueError(f"{parts[-1][:40]}: expected a regular file of at most {limit} bytes")
    return f


def read_json(root, rel, limit: int):
    """The JSON file ``root/rel`` (see :func:`open_under`), at most ``limit`` bytes."""
    with open_under(root, rel, limit) as f:
        return json.loads(f.read(limit + 1))


def decode(tree, folder, tensors: bool, budget: Budget, _depth=0):
    """The value ``encode`` wrote; arrays become tensors (``tensors=True``) or numpy arrays.

    ``folder`` holds the arrays: a path, or ``(root, rel)`` when only ``root`` is trusted.
    """
    budget.take("items")
    if _depth > budget.depth:
        raise ValueError("reply: nested deeper than its budget")
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if isinstance(tree, list):
        return [decode(x, folder, tensors, budget, _depth + 1) for x in tree]
    if not isinstance(tree, dict) or len(tree) > 2:
        raise ValueError(f"reply: expected plain data, got {type(tree).__name__}")
    if "tuple" in tree and isinstance(tree["tuple"], list):
        return tuple(decode(x, folder, tensors, budget, _depth + 1) for x in tree["tuple"])
    if "dict" in tree and isinstance(tree["dict"], dict):
        budget.take("keys", len(tree["dict"]))
        return {str(k): decode(v, folder, tensors, budget, _depth + 1) for k, v in tree["dict"].items()}
    if "items" in tree and isinstance(tree["items"], list):
        budget.take("keys", len(tree["items"]))
        return dict(_item(pair, folder, tensors, budget, _depth) for pair in tree["items"])
    if "scalar" in tree:
        return decode(tree["scalar"], folder, tensors, budget, _depth + 1)
    if "object" in tree:
        return Unplain(str(tree["object"])[:100])
    if "array" in tree:
        return _array(tree, folder, tensors, budget)
    raise ValueError("reply: expected plain data, got a dict of another form")


def _item(pair, folder, tensors, budget, depth):
    if not isinstance(pair, list) or len(pair) != 2:
        raise ValueError("reply: expected a [key, value] pair")
    key = decode(pair[0], folder, False, budget, depth + 1)
    if not _hashable(key):
        raise ValueError("reply: a dict key must be a str, a number, a bool, None or a tuple of them")
    return key, decode(pair[1], folder, tensors, budget, depth + 1)


def _hashable(x) -> bool:
    if isinstance(x, tuple):
        return all(_hashable(v) for v in x)
    return x is None or isinstance(x, (bool, int, float, str))


def _torch_dtypes() -> None:
    """``TORCH_DTYPES``' names made into torch's dtypes, once torch is imported."""
    import torch

    for name, value in TORCH_DTYPES.items():
        if isinstance(value, str):
            TORCH_DTYPES[name] = getattr(torch, value)


def _array(tree, folder, tensors, budget):
    name = str(tree.get("array"))
    if not re.fullmatch(r"[0-9]{1,9}\.npy", name):
        raise ValueError(f"reply: expected an array file <n>.npy, got {name[:40]!r}")
    root, rel = folder if isinstance(folder, tuple) else (folder, "")
    with open_under(root, f"{rel}/{name}", budget.file_bytes) as f:
        arr = _load(f, name, budget)
    if not tensors or not tree.get("torch"):
        return arr
    import torch

    _torch_dtypes()
    t = torch.from_numpy(arr)
    want = TORCH_DTYPES.get(str(tree["torch"]))  # a fixed table: a reply's string never reaches getattr(torch, ...)
    if want is None or want.is_floating_point != t.is_floating_point() or want == t.dtype:
        return t
    budget.take("array_bytes", t.numel() * want.itemsize)  # the converted copy costs memory too
    return t.to(want)


def _load(f, name, budget):
    """The array in the open ``.npy`` file ``f``, read only after its header is within the budget."""
    version = np.lib.format.read_magic(f)
    header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    if header is None:
        raise ValueError(f"{name}: expected an .npy file of version 1 or 2")
    shape, fortran, dtype = header(f, max_header_size=budget.header_bytes)
    if dtype.kind not in ARRAY_KINDS + "c" or dtype.hasobject or len(shape) > budget.dims:
        raise ValueError(f"{name}: expected an array of numbers of at most {budget.dims} dimensions")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    nbytes = count * dtype.itemsize
    budget.take("elements", count)
    budget.take("array_bytes", nbytes)
    data = f.read(nbytes + 1)
    if len(data) != nbytes:
        raise ValueError(f"{name}: the file does not hold the array its header describes")
    arr = np.frombuffer(data, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C")
    return np.array(arr, order="C")  # writable, its own memory


class Unplain:
    """What came back in place of an object that is not plain data (a module, a function, ...)."""

    def __init__(self, kind):
        self.kind = kind  # the student's words: never shown

    def __repr__(self):
        return "<an object that is not plain data>"
