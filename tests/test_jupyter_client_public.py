"""The grader uses jupyter_client through its public API only, so that an upgrade within its promises cannot break it.

A name with a leading underscore is no promise of jupyter_client's: it may be renamed, or called at another moment,
in any release. The grader once subclassed ``KernelManager`` and overrode two of its private methods
(``_connect_control_socket``, ``_async_interrupt_kernel``) to keep its sockets off the kernel; it now writes the
connection file and signs messages with public functions and classes and runs the kernel itself
(``grader/running/kernel.py``). This test reads every module of ``grader/`` that imports jupyter_client and fails on
a private name imported from it, a subclass of one of its classes (whose private methods a subclass may override),
an attribute with a leading underscore reached on anything but the module's own ``self`` or ``cls``, or one
named as a string (``getattr(x, "_name")``).
"""

from __future__ import annotations

import ast

from layout.paths import ROOT

LIBRARY = "jupyter_client"
BY_NAME = ("getattr", "setattr", "hasattr", "delattr")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _root(node: ast.AST) -> str | None:
    """The name an attribute chain starts from: ``a`` of ``a.b.c``."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _imports(tree: ast.AST) -> tuple[set[str], list[str]]:
    """The names bound to jupyter_client or to what it exports, and its private names imported."""
    names, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == LIBRARY:
                    names.add(alias.asname or alias.name.split(".")[0])
                    if any(map(_private, alias.name.split("."))):
                        found.append(f"line {node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == LIBRARY:
            for alias in node.names:
                names.add(alias.asname or alias.name)
                if _private(alias.name) or any(map(_private, node.module.split("."))):
                    found.append(f"line {node.lineno}: imports {alias.name} from {node.module}")
    return names, found


def private_uses(source: str) -> list[str]:
    """What ``source`` reaches of jupyter_client that is not its public API; [] for a module that does not import
    it."""
    tree = ast.parse(source)
    names, found = _imports(tree)
    if not names:
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(_root(base) in names for base in node.bases):
            found.append(f"line {node.lineno}: class {node.name} subclasses jupyter_client's")
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BY_NAME:
            named = node.args[1] if len(node.args) > 1 else None
            if isinstance(named, ast.Constant) and isinstance(named.value, str) and _private(named.value):
                found.append(f"line {node.lineno}: {node.func.id}(..., {named.value!r})")
    return found


def test_the_grader_reaches_no_private_name_of_jupyter_client():
    users = {path.relative_to(ROOT).as_posix(): private_uses(path.read_text(encoding="utf-8"))
             for path in sorted((ROOT / "grader").rglob("*.py"))
             if LIBRARY in path.read_text(encoding="utf-8")}
    assert "grader/running/kernel.py" in users  # the module that runs kernels is read
    assert {path: found for path, found in users.items() if found} == {}


def test_each_way_of_reaching_a_private_name_is_found():
    """The grader's old kernel manager, and the other ways in, each found; public use passes."""
    old = '''
from jupyter_client import KernelManager

class SandboxedKernelManager(KernelManager):
    def _connect_control_socket(self):
        pass
'''
    assert private_uses(old) == ["line 4: class SandboxedKernelManager subclasses jupyter_client's"]
    assert private_uses("import jupyter_client.manager as m\nclass K(m.KernelManager): pass") == [
        "line 2: class K subclasses jupyter_client's"]
    assert private_uses("from jupyter_client._version import version_info") == [
        "line 1: imports version_info from jupyter_client._version"]
    assert private_uses("from jupyter_client.session import Session\ns = Session()\ns._check_packers()") == [
        "line 3: ._check_packers"]
    assert private_uses("import jupyter_client\nself.km.session._digest_history") == ["line 2: ._digest_history"]
    assert private_uses("import jupyter_client\ngetattr(km, '_control_socket')") == [
        "line 2: getattr(..., '_control_socket')"]
    public = '''
from jupyter_client import write_connection_file
from jupyter_client.session import Session

class Kernel:
    def start(self):
        self.session = Session(key=b"k")
        write_connection_file("f.json", key=self.session.key)
        self._wait_ready(), self.__class__.__name__
'''
    assert private_uses(public) == []
    assert private_uses("import os\nos._exit") == []  # a module that does not import jupyter_client
