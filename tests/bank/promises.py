"""Wrong answers that break one promise of an exercise's text and nothing else, made from the solution's own answer:
appended to the answer cell, ``wrapper(name, kind)`` redefines the function or module ``name`` the cell defines so that
it computes the solution's result and then

- ``"keeps"``: changes the inputs it was given in place (tensors that do not require grad, dicts, lists), as code that
  works in place would (the exercise says its inputs are not changed);
- ``"dtype"``: returns its result in another dtype, float64 for float32 and back, int32 for int64 and back, uint8 for
  bool (the exercise says which dtype the result has);
- ``"shape"``: returns every tensor of its result with a leading dimension of size 1 (the exercise says its shape).

``kind`` is ``"function"`` or ``"module"`` (its ``forward`` is wrapped); :func:`kind_of` reads it from the cell.
"""

from __future__ import annotations

import re

_PRELUDE = """
import copy as _copy_module

_OTHER_DTYPE = {torch.float32: torch.float64, torch.float64: torch.float32, torch.int64: torch.int32,
                torch.int32: torch.int64, torch.bool: torch.uint8}


def _copied(value):
    if isinstance(value, torch.Tensor) and not value.requires_grad:
        return value.clone()
    return _copy_module.deepcopy(value) if isinstance(value, (dict, list)) else value


def _change(values):
    for value in values:
        if isinstance(value, torch.Tensor) and not value.requires_grad:
            with torch.no_grad():
                if value.dtype == torch.bool:
                    value.logical_not_()
                else:
                    value.add_(1)
        elif isinstance(value, dict):
            value.clear()
        elif isinstance(value, list):
            value.append(value[0] if value else 0)


def _retyped(value):
    if isinstance(value, torch.Tensor):
        return value.to(_OTHER_DTYPE.get(value.dtype, torch.float64))
    return type(value)(_retyped(v) for v in value) if isinstance(value, (tuple, list)) else value


def _keeps(fn, args, kwargs):
    out = fn(*[_copied(a) for a in args], **{k: _copied(v) for k, v in kwargs.items()})
    _change([*args, *kwargs.values()])
    return out


def _reshaped(value):
    if isinstance(value, torch.Tensor):
        return value[None]
    return type(value)(_reshaped(v) for v in value) if isinstance(value, (tuple, list)) else value


def _dtype(fn, args, kwargs):
    return _retyped(fn(*args, **kwargs))


def _shape(fn, args, kwargs):
    return _reshaped(fn(*args, **kwargs))
"""
_FUNCTION = "\n_given = {name}\n\ndef {name}(*args, **kwargs):\n    return _{broken}(_given, args, kwargs)\n"
_MODULE = ("\n_Given = {name}\n\nclass {name}(_Given):\n    def forward(self, *args, **kwargs):\n"
           "        return _{broken}(super().forward, args, kwargs)\n")


def kind_of(source: str, name: str) -> str | None:
    """``"function"`` or ``"module"``: what the answer cell ``source`` defines under ``name`` (None: neither)."""
    if re.search(rf"^def {name}\(", source, re.M):
        return "function"
    if re.search(rf"^class {name}\((torch\.)?nn\.Module\)", source, re.M):
        return "module"
    return None


def broken(source: str, name: str, promise: str) -> str:
    """The answer cell ``source`` with ``name`` made to break ``promise`` (``"keeps"``, ``"dtype"`` or ``"shape"``)
    alone."""
    template = _FUNCTION if kind_of(source, name) == "function" else _MODULE
    return source + _PRELUDE + template.format(name=name, broken=promise)
