"""The other names of the same code: :func:`routes` derives, from PyTorch itself, every entry point of what a
forbidden dotted name stands for (its ATen operators and their bindings, the private operators that do a caller's
whole work, the wrappers and ``torch.nn`` classes whose code calls them). The kernel's recorder
(``forbidden_calls``) watches a forbidden name under its routes, and the grader's static reading
(``grader/judging/forbidden.py``) finds it by any of them. Standard library and torch only.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import linecache
import sys
import types

# Where PyTorch binds an ATen operator to Python under the operator's own name.
BINDINGS = ("torch", "torch._C._VariableFunctions", "torch._C._nn", "torch._C._special", "torch._C._linalg",
            "torch._C._fft", "torch._VF", "torch.nn.functional", "torch.Tensor")
ALIASES = {"special_": "torch.special", "linalg_": "torch.linalg", "fft_": "torch.fft"}  # torch.special.softmax
WRAPPERS = ("torch.nn.functional", "torch.nn.modules", "torch.functional")  # Python wrappers whose returns are read
# What cannot be derived: operators that do another one's whole work, tied to it neither by the registry (no edge
# from an operator to the kernels its C++ calls), nor by their names, nor by a caller that returns their result
# (``nn.MultiheadAttention`` returns ``_native_multi_head_attention``'s: that one is derived).
IMPLEMENTED_BY = {
    # the backends scaled_dot_product_attention chooses among in C++ at run time (_fused_sdp_choice)
    "scaled_dot_product_attention": (
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_fused_attention_overrideable",
        # and the kernels those backends call on a GPU, and PyTorch's experimental Triton ones (no CPU kernel: they
        # cannot run here, but they are the same work); tests/test_forbidden_recorder.py walks the registry for more
        "_flash_attention_forward", "_flash_attention_forward_no_dropout_inplace", "_efficient_attention_forward",
        "_cudnn_attention_forward", "_triton_scaled_dot_attention", "_triton_multi_head_attention",
        # and the choice it makes first, whatever the backend: the math one runs as its pieces (matmul, softmax),
        # which a dispatch mode sees only as those, so this is how it sees that one run
        "_fused_sdp_choice"),
    "nll_loss_nd": ("nll_loss", "nll_loss2d"),  # chosen by the input's rank in C++
    # a qualifier before the name (the rule below would take _log_softmax, which is not a softmax, along with them)
    "softmax": ("_safe_softmax", "_masked_softmax", "_sparse_softmax"),
}


def routes(name: str, callers: bool = True) -> dict:
    """Every other entry point of the code that the dotted ``name`` (a torch callable) stands for, dotted name ->
    object: the ATen operators it is (its own, or the one a Python wrapper or a module's ``forward`` returns:
    ``F.layer_norm`` -> ``layer_norm``), each with its in-place form, its ``native_``, ``_``-prefixed and
    ``_forward`` implementations and ``IMPLEMENTED_BY``, and the private operators whose result a caller (below)
    returns as it is, which do that caller's whole work (its fused fast path: ``_native_multi_head_attention`` of
    ``nn.MultiheadAttention``, ``_transformer_encoder_layer_fwd`` of ``nn.TransformerEncoderLayer``); every binding
    of those (``torch``, ``torch._C._nn``, ``torch._C._VariableFunctions``, ``torch._VF``, the tensor method,
    ``torch.ops.aten.<op>`` and each overload); with ``callers``, the functions of ``torch.nn.functional`` and the
    ``torch.nn`` classes whose code calls any of these (``nn.LayerNorm``; ``nn.MultiheadAttention`` through
    ``F.multi_head_attention_forward``). Nothing for a module or for what is not PyTorch's."""
    return dict(_routes(name, callers))


@functools.lru_cache(maxsize=None)
def _routes(name: str, callers: bool) -> tuple:
    obj = resolve(name)
    torch = sys.modules.get("torch")
    if torch is None or obj is None or inspect.ismodule(obj) or not _torchs(obj):
        return ()
    found, ops, done = {}, {f for own in _ops(obj) for f in _family(own)}, set()
    while True:  # the fast paths of its callers are its routes, and their callers' fast paths in turn
        for op in sorted(ops - done):
            found.update(_bindings(op))
        done |= ops
        called = _callers([obj, *found.values()])
        ops |= {f for caller in called.values() for op in _ops(caller) if op.startswith("_") for f in _family(op)}
        if ops <= done:
            break
    if callers:
        found.update(called)
    found.pop(name, None)
    return tuple(found.items())


def _torchs(obj) -> bool:
    home = getattr(obj, "__module__", None) or getattr(getattr(obj, "__objclass__", None), "__module__", "")
    return isinstance(home, str) and under(home, ("torch",))


@functools.lru_cache(maxsize=None)
def _aten() -> frozenset:
    """The names of the ATen operators in PyTorch's registry (``aten::layer_norm``'s ``layer_norm``)."""
    torch = sys.modules["torch"]
    return frozenset(n[6:].split(".")[0] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))


@functools.lru_cache(maxsize=None)
def _space(name: str):
    return resolve(name)


def _op(obj) -> str | None:
    """The ATen operator that ``obj`` is: an operator of ``torch.ops.aten``, or a C function bound under the
    operator's name in one of ``BINDINGS`` (or, prefixed, in one of ``ALIASES``)."""
    ops = sys.modules["torch"]._ops
    if isinstance(obj, (ops.OpOverloadPacket, ops.OpOverload)):
        space, _, op = (obj._qualified_op_name if isinstance(obj, ops.OpOverloadPacket) else obj._schema.name
                        ).partition("::")
        return op if space == "aten" else None
    name = getattr(obj, "__name__", None)
    if not isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType)) or name not in _aten():
        return None
    spaces = [*BINDINGS, *(space for prefix, space in ALIASES.items() if name.startswith(prefix))]
    short = {space: name.split("_", 1)[1] for prefix, space in ALIASES.items() if name.startswith(prefix)}
    return name if any(getattr(_space(s), short.get(s, name), None) is obj for s in spaces) else None


def _ops(obj, depth: int = 0) -> set:
    """The ATen operators ``obj`` is: its own, or those whose result a Python wrapper of ``WRAPPERS`` returns
    as it is (a class: its ``forward``)."""
    op = _op(obj)
    if op is not None:
        return {op}
    if inspect.isclass(obj):
        obj = getattr(obj, "forward", None)
    if depth > 4 or not inspect.isfunction(obj) or not under(getattr(obj, "__module__", "") or "", WRAPPERS):
        return set()
    return _returned(obj, depth)


def _definition(fn):
    """The syntax tree of ``fn``'s definition, read from its file (None when it cannot be read)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return None
    try:
        text = "".join(inspect.getblock(linecache.getlines(code.co_filename)[code.co_firstlineno - 1:]))
        tree = ast.parse("if 1:\n" + text if text[:1].isspace() else text)
    except Exception:  # noqa: BLE001 - no source, or source that does not parse: nothing to read
        return None
    node = tree.body[0] if tree.body else None
    node = node.body[0] if isinstance(node, ast.If) else node
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _returned(fn, depth: int) -> set:
    """The operators whose result ``fn`` returns as it is: ``return torch.layer_norm(...)``, ``ret =
    input.softmax(dim); return ret`` (a method of a parameter), a tuple's first item (``output = result[0]``); not
    what it computes further (``out.view(...)`` of a local, ``a, b = f(...)``), which is no longer the same code."""
    node = _definition(fn)
    if node is None:
        return set()
    args = node.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    local = _locals(node)
    assigned: dict = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            assigned.setdefault(n.targets[0].id, []).append(n.value)
    todo = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
    found, seen = set(), set(params)  # a parameter returned is the input, not an operator's result
    while todo:
        expr = todo.pop()
        if isinstance(expr, ast.Tuple) and expr.elts:
            todo.append(expr.elts[0])
        elif isinstance(expr, ast.Subscript):
            todo.append(expr.value)
        elif isinstance(expr, ast.Name) and expr.id not in seen:
            seen.add(expr.id)
            todo += assigned.get(expr.id, [])
        elif isinstance(expr, ast.Call):
            callee, method, on = _callee(expr.func, fn.__globals__, local)
            if callee is not None:
                found |= _ops(callee, depth + 1)
            elif method is not None and on in params:
                found |= {op for op in [_op(getattr(sys.modules["torch"].Tensor, method, None))] if op}
    return found


def _locals(node: ast.AST) -> set:
    """The parameters and assigned names of a function's definition (they hide the module's names)."""
    args = node.args
    return ({a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
            | {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})


def _callee(func: ast.AST, scope: dict, local: set) -> tuple:
    """(the object that a call's function names through ``scope`` and the builtins, or None; else, when it is an
    attribute, the attribute's name and the local name it is taken on, None for an expression)."""
    attrs, root = [], func
    while isinstance(root, ast.Attribute):
        attrs.append(root.attr)
        root = root.value
    name = root.id if isinstance(root, ast.Name) else None
    if name is None or name in local or (name not in scope and not hasattr(builtins, name)):
        return None, (attrs[0] if attrs else None), name
    obj = scope[name] if name in scope else getattr(builtins, name)
    for attr in reversed(attrs):
        try:  # a plain module's own attributes only: its __getattr__ may import (torch's imports torch._dynamo)
            obj = vars(obj).get(attr) if type(obj) is types.ModuleType else getattr(obj, attr, None)
        except Exception:  # noqa: BLE001 - a lazy attribute that fails names nothing
            return None, None, None
    return obj, None, None


def _family(op: str) -> set:
    """``op`` and the operators that do its work: in place (``tril_``), ``native_op``, ``_op``, ``_op_<variant>``,
    ``op_forward``, the alias ``special_op`` and ``IMPLEMENTED_BY``; never a backward."""
    aten, found, todo = _aten(), set(), [op]
    while todo:
        o = todo.pop()
        if o in found:
            continue
        found.add(o)
        near = {f"{o}_", f"native_{o}", f"_{o}", f"{o}_forward", f"special_{o}", *IMPLEMENTED_BY.get(o, ())}
        todo += [a for a in near | {a for a in aten if a.startswith(f"_{o}_")} if a in aten and "backward" not in a]
    return found


def _bindings(op: str) -> dict:
    """Every Python name of the ATen operator ``op``: its C functions, tensor method, operator and overloads."""
    found = {}
    for space in BINDINGS:
        obj = getattr(_space(space), op, None)
        if obj is not None and _op(obj) == op:
            found[f"{space}.{op}"] = obj
    for prefix, space in ALIASES.items():
        obj = getattr(_space(space), op[len(prefix):], None) if op.startswith(prefix) else None
        if obj is not None and _op(obj) == op:
            found[f"{space}.{op[len(prefix):]}"] = obj
    packet = getattr(sys.modules["torch"].ops.aten, op)
    found[f"torch.ops.aten.{op}"] = packet
    for overload in packet.overloads():
        found[f"torch.ops.aten.{op}.{overload}"] = getattr(packet, overload)
    return found


@functools.lru_cache(maxsize=1)
def _library() -> tuple:
    """(dotted name, object, the calls of its code: (object or None, method name or None)) for every function of
    ``torch.nn.functional`` and every ``torch.nn`` module class (its methods, inherited ones too, but
    ``nn.Module``'s: ``TransformerEncoderLayer`` makes and calls a ``MultiheadAttention``)."""
    torch = sys.modules["torch"]
    found = []
    for space, kind in ((torch.nn.functional, inspect.isfunction), (torch.nn, inspect.isclass)):
        for key, obj in sorted(vars(space).items()):
            if not kind(obj):
                continue
            codes = [obj] if kind is inspect.isfunction else [  # a class: its own and inherited methods
                getattr(m, "__func__", m) for c in obj.__mro__ if c is not torch.nn.Module for m in vars(c).values()]
            calls = []
            for code in codes:
                node = _definition(code) if inspect.isfunction(code) and under(code.__module__ or "", WRAPPERS) \
                    else None
                local = _locals(node) if node is not None else set()
                calls += [] if node is None else [_callee(n.func, code.__globals__, local)[:2]
                                                  for n in ast.walk(node) if isinstance(n, ast.Call)]
            if calls:
                found.append((f"{space.__name__}.{key}", obj, tuple(calls)))
    return tuple(found)


def _callers(objs: list) -> dict:
    """The functions and classes of ``_library`` whose code calls one of ``objs`` (a tensor method of them by its
    name), or a function that does (to a fixed point)."""
    torch = sys.modules["torch"]
    known = {id(o) for o in objs}
    methods = {o.__name__ for o in objs if isinstance(o, types.MethodDescriptorType) and o.__objclass__ in
               torch.Tensor.__mro__}
    found: dict = {}
    while True:
        more = {key: obj for key, obj, calls in _library() if key not in found and any(
            (o is not None and id(o) in known) or (m is not None and m in methods) for o, m in calls)}
        if not more:
            return found
        found.update(more)
        known |= {id(o) for o in more.values()}


def under(name: str, prefixes) -> bool:
    """Whether the dotted ``name`` is one of ``prefixes`` or inside one."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def resolve(name: str):
    """The object a dotted name stands for (the longest importable module, then attributes), or None."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:  # noqa: BLE001 - a missing or broken module: try a shorter prefix
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj
    return None
