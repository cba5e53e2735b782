"""Plain data between the grader and a kernel: JSON with arrays as ``.npy`` files, never a pickle.

The same two functions run on both sides. The grader sends this module's source into the sandboxed
kernel, so it imports nothing at module level. ``encode`` turns tensors, arrays, numbers, strings,
lists, tuples and dicts into a JSON tree whose arrays are files ``<n>.npy`` in ``folder``;
``decode`` reads it back, refusing anything that is not plain data (a pickle, a link, a huge file).
"""

MAX_BYTES = 64 * 2**20      # one reply file
MAX_ITEMS = 100_000         # nodes in one tree
ARRAY_KINDS = "biuf"        # bool, int, unsigned, float: nothing that can hold an object


def encode(obj, folder, _count=None):
    """A JSON-able tree for ``obj``; its arrays are written to ``folder`` as ``<n>.npy``."""
    import os

    import numpy as np
    count = [0] if _count is None else _count
    count[0] += 1
    if count[0] > MAX_ITEMS:
        raise ValueError(f"reply: expected at most {MAX_ITEMS} values, got more")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, float)) and type(obj) in (int, float):
        return obj
    kind = type(obj).__module__.split(".")[0]
    if kind == "torch" and hasattr(obj, "detach"):  # a tensor
        dtype = str(obj.dtype)
        t = obj.detach().cpu()
        if t.is_complex() or dtype in ("torch.bfloat16", "torch.float16"):
            t = t.to(getattr(__import__("torch"), "complex128" if t.is_complex() else "float32"))
        arr, tensor = np.array(t.resolve_conj().resolve_neg().numpy(), order="C"), dtype
    elif isinstance(obj, np.ndarray):
        arr, tensor = np.array(obj, order="C"), None
    elif isinstance(obj, np.generic):
        return {"scalar": obj.item(), "dtype": str(obj.dtype)}
    elif isinstance(obj, list):
        return [encode(x, folder, count) for x in obj]
    elif isinstance(obj, tuple):
        return {"tuple": [encode(x, folder, count) for x in obj]}
    elif isinstance(obj, dict):
        if all(type(k) is str for k in obj):
            return {"dict": {k: encode(v, folder, count) for k, v in obj.items()}}
        return {"items": [[encode(k, folder, count), encode(v, folder, count)] for k, v in obj.items()]}
    else:
        return {"object": type(obj).__name__}
    if arr.dtype.kind not in ARRAY_KINDS:
        return {"object": f"array of {arr.dtype}"}
    name = f"{count[0]}.npy"
    np.save(os.path.join(folder, name), arr, allow_pickle=False)
    return {"array": name, "torch": tensor}


def open_under(root, rel):
    """The regular file ``root/rel``, opened for reading without following a link anywhere below
    ``root`` and without waiting on a pipe; at most MAX_BYTES. ``root`` is trusted, ``rel`` is not."""
    import os
    import stat

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
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
        f.close()
        raise ValueError(f"{parts[-1]}: expected a regular file of at most {MAX_BYTES} bytes")
    return f


def read_json(root, rel):
    """The JSON file ``root/rel`` (see :func:`open_under`)."""
    import json

    with open_under(root, rel) as f:
        return json.loads(f.read(MAX_BYTES + 1))


def decode(tree, folder, tensors=True, _count=None):
    """The value ``encode`` wrote; arrays become tensors (``tensors=True``) or numpy arrays.

    ``folder`` holds the arrays: a path, or ``(root, rel)`` when only ``root`` is trusted.
    """
    import re

    import numpy as np
    count = [0] if _count is None else _count
    count[0] += 1
    if count[0] > MAX_ITEMS:
        raise ValueError(f"reply: expected at most {MAX_ITEMS} values, got more")
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if isinstance(tree, list):
        return [decode(x, folder, tensors, count) for x in tree]
    if not isinstance(tree, dict) or len(tree) > 2:
        raise ValueError(f"reply: expected plain data, got {type(tree).__name__}")
    if "tuple" in tree:
        return tuple(decode(x, folder, tensors, count) for x in tree["tuple"])
    if "dict" in tree:
        return {str(k): decode(v, folder, tensors, count) for k, v in tree["dict"].items()}
    if "items" in tree:
        return {_hashable(decode(k, folder, tensors, count)): decode(v, folder, tensors, count)
                for k, v in tree["items"]}
    if "scalar" in tree:
        return decode(tree["scalar"], folder, tensors, count)
    if "object" in tree:
        return Unplain(str(tree["object"])[:100])
    name = str(tree.get("array"))
    if not re.fullmatch(r"[0-9]{1,9}\.npy", name):
        raise ValueError(f"reply: expected an array file <n>.npy, got {name[:40]!r}")
    root, rel = folder if isinstance(folder, tuple) else (folder, "")
    with open_under(root, f"{rel}/{name}") as f:
        arr = np.load(f, allow_pickle=False)
    if arr.dtype.kind not in ARRAY_KINDS + "c":
        raise ValueError(f"{name}: expected numbers, got an array of {arr.dtype}")
    if not tensors or not tree.get("torch"):
        return arr
    import torch
    t = torch.from_numpy(arr.copy())
    want = getattr(torch, str(tree["torch"]).replace("torch.", ""), None)
    return t.to(want) if isinstance(want, torch.dtype) else t


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(v) for v in x)
    return x if not hasattr(x, "shape") else tuple(x.tolist())


class Unplain:
    """What came back in place of an object that is not plain data (a module, a function, ...)."""

    def __init__(self, kind):
        self.kind = kind

    def __repr__(self):
        return f"<{self.kind}>"
