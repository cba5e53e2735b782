"""Every cap, budget and timeout of the grader lives in ``grader/limits.py``, and the guide states them as they are.

- The guide (``book/instructors.md``): each phrase of ``GUIDE`` must be in it, stating the value its limit has now;
  every size in MiB or GiB the guide names must be one of those phrases.
- The grader's modules: none but ``limits.py`` defines an upper-case constant that is a number (``ALLOWED`` lists
  the few that bound nothing, each with its reason).
- The kernel side gets its sizes from the trusted side, and the trusted side reads replies under its own budget.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grader import limits
from grader.kernel_side import plain
from grader.running import run, sandbox
from layout.paths import ROOT

GUIDE = ROOT / "book" / "instructors.md"
KIB, MIB, GIB = limits.KIB, limits.MIB, limits.GIB
UNITS = {"": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB, "seconds": 1, "minutes": 60, "times": 1}
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
         "ten": 10, "fifteen": 15, "twenty": 20}
NUMBER = r"(?P<n>\d[\d,]*(?:\.\d+)?(?: million)?|" + "|".join(WORDS) + ")"

# The guide's phrases that state a limit: (the phrase, "{n}" where the number stands; the limit; the number's unit).
GUIDE_PHRASES = [
    ("inflated past {n} MiB", "MAX_FILE_BYTES", "MiB"),
    ("or {n} times its compressed size", "MAX_ZIP_RATIO", ""),
    ("holds more than {n} members", "MAX_ZIP_MEMBERS", ""),
    ("of more than {n} files and folders becomes that student's row", "MAX_SUBMISSION_ENTRIES", ""),
    ("outside every student's (more than {n} of them)", "MAX_FOLDER_ENTRIES", ""),
    ("members or {n} GiB, is refused", "MAX_ZIP_BYTES", "GiB"),
    ("so does a file over {n} MiB", "MAX_FILE_BYTES", "MiB"),
    ("over {n} cells", "MAX_CELLS", ""),
    ("with a cell over {n} characters", "MAX_CELL_CHARS", ""),
    ("runs longer than {n} seconds", "CELL_TIMEOUT_S", "seconds"),
    ("at most {n} times per submission", "MAX_DEATHS", "times"),
    ("{n} cell timeouts by default", "BUDGET_TIMEOUTS", ""),
    ("output kept for its page is capped ({n} characters)", "MAX_NOTEBOOK_CHARS", ""),
    ("one cell timeout and {n} minutes past its time budget", "DEADLINE_GRACE_S", "minutes"),
    ("the first {n} submissions that need attention", "ATTENTION_SHOWN", ""),
    ("A page is at most {n} MiB", "MAX_PAGE_BYTES", "MiB"),
    ("a file system of its own of {n} MiB", "BOX_BYTES", "MiB"),
    ("a bound ({n} GiB) on all the memory", "MEMORY_BYTES", "GiB"),
    ("bounded only by {n} MiB per file", "SANDBOX_FILE_BYTES", "MiB"),
    ("compared up to its first {n} characters", "MAX_CODE_CHARS", ""),
]

# Upper-case numeric constants of grader modules that are not limits, and why. Keep it short: a new bound goes
# into grader/limits.py.
ALLOWED = {
    ("grader/running/sandbox.py", "FIRST_UID"): "where the sandboxes' uids start (how many: limits.SANDBOX_UIDS)",
    ("grader/collecting/platforms.py", "UUID_ATTEMPT"): "Canvas's own numbering: from the 8th upload of one name it "
                                                        "writes a UUID",
    ("grader/progress.py", "PLAIN_EVERY_S"): "how often a plain progress line is printed: a rhythm, not a bound",
    ("grader/running/wire.py", "MORE"): "a ZMTP 3.0 frame flag (protocol), not a size",
    ("grader/running/wire.py", "LONG"): "a ZMTP 3.0 frame flag (protocol), not a size",
    ("grader/running/wire.py", "COMMAND"): "a ZMTP 3.0 frame flag (protocol), not a size",
    ("grader/reporting/similarity.py", "NOISE"): "copydetect's fingerprint parameter: what a match is, not a bound",
    ("grader/reporting/similarity.py", "WINDOW"): "copydetect's winnowing window: how fingerprints are taken, not a "
                                                   "bound",
    ("grader/reporting/similarity.py", "THRESHOLD"): "the default share from which a pair is listed (--similar): a "
                                                      "setting",
}
# The exercises' own data (tolerances, sizes of hidden inputs) is not the grader's limits.
NOT_SCANNED = ("grader/hidden/",)


def _number(text: str) -> float:
    text = text.strip()
    if text in WORDS:
        return WORDS[text]
    scale = 10**6 if text.endswith(" million") else 1
    return float(text.removesuffix(" million").replace(",", "")) * scale


def _pattern(phrase: str) -> str:
    words = [re.escape(w) for w in phrase.replace("{n}", "\0").split()]
    return r"\s+".join(words).replace("\0", NUMBER)


def guide_drift(text: str, table=limits) -> list[str]:
    """What the guide says that the limits no longer have, and limits of GUIDE_PHRASES it does not state."""
    wrong = []
    for phrase, name, unit in GUIDE_PHRASES:
        found = list(re.finditer(_pattern(phrase), text))
        if not found:
            wrong.append(f"the guide does not state {name}: no {phrase!r}")
        for m in found:
            said = _number(m["n"]) * UNITS[unit]
            if said != getattr(table, name):
                wrong.append(f"the guide says {m[0]!r}, but {name} = {getattr(table, name)}")
    return wrong


def unlisted_sizes(text: str) -> list[str]:
    """Sizes in KiB, MiB or GiB that the guide states outside the phrases of GUIDE_PHRASES."""
    covered = [m.span() for phrase, _, _ in GUIDE_PHRASES for m in re.finditer(_pattern(phrase), text)]
    return [m[0] for m in re.finditer(r"\d[\d,.]*\s*[KMG]iB", text)
            if not any(a <= m.start() and m.end() <= b for a, b in covered)]


def test_the_guide_states_every_listed_limit_as_it_is():
    text = GUIDE.read_text(encoding="utf-8")
    assert guide_drift(text) == []
    assert unlisted_sizes(text) == [], "a size the guide states: add its phrase to GUIDE_PHRASES"


def test_a_number_that_drifts_on_either_side_is_caught(monkeypatch):
    text = GUIDE.read_text(encoding="utf-8")
    assert any("MAX_PAGE_BYTES" in w for w in guide_drift(text.replace("A page is at most 16", "A page is at most 32")))
    assert any("MAX_DEATHS" in w for w in guide_drift(re.sub(r"at most\s+three times", "at most four times", text)))
    assert any("not state BOX_BYTES" in w for w in guide_drift(text.replace("of its own of 256 MiB", "of its own")))
    assert unlisted_sizes(text + "\nA reply holds at most 32 MiB.\n") == ["32 MiB"]
    monkeypatch.setattr(limits, "MAX_CELLS", 400)
    assert any("MAX_CELLS = 400" in w for w in guide_drift(text))


def test_nbgrader_config_times_cells_by_the_table():
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.Execute.timeout == limits.CELL_TIMEOUT_S


def _numeric(node: ast.AST) -> bool:
    """A number, or arithmetic of numbers (and names): what a bound looks like."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        sides = (node.left, node.right)
        return any(_numeric(s) for s in sides) and all(_numeric(s) or isinstance(s, (ast.Name, ast.Attribute))
                                                        for s in sides)
    return False


def numeric_constants(path: Path) -> list[str]:
    """The upper-case module-level names of ``path`` bound to a number (tuple unpacking too)."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            pairs = []
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs += zip(target.elts, node.value.elts)
                else:
                    pairs.append((target, node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(node.target, node.value)]
        else:
            continue
        found += [t.id for t, v in pairs if isinstance(t, ast.Name) and t.id.isupper() and _numeric(v)]
    return found


def _grader_modules() -> list[Path]:
    return [p for p in sorted((ROOT / "grader").rglob("*.py"))
            if p.name != "limits.py" or p.parent != ROOT / "grader"
            if not str(p.relative_to(ROOT)).startswith(NOT_SCANNED)]


def test_no_grader_module_but_limits_defines_a_numeric_constant():
    found = {(str(p.relative_to(ROOT)), name) for p in _grader_modules() for name in numeric_constants(p)}
    assert found - set(ALLOWED) == set(), "put these limits into grader/limits.py"
    assert set(ALLOWED) - found == set(), "no longer defined: take them off ALLOWED"


def test_the_scan_sees_a_new_limit(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("A = 'x'\nMAX_ROWS = 5\nBYTES: int = 16 * 2**20\nGRACE = 2 * READY_S + 60\nFLAG, N = 'a', 3\n"
                      "flags = 4\nON = True\n")
    assert numeric_constants(module) == ["MAX_ROWS", "BYTES", "GRACE", "N"]


def test_the_kernel_side_is_handed_its_sizes_and_the_grader_keeps_its_own():
    assert run.KERNEL_SIZES == {"request": limits.REQUEST_BUDGET, "reply_items": limits.REPLY_BUDGET["items"],
                                "error_chars": limits.KERNEL_ERROR_CHARS}
    assert all(limits.REQUEST_BUDGET[k] >= v for k, v in limits.REPLY_BUDGET.items()), "a request reads no less"
    setup = run.setup_code(Path("/box"), ("/venv",))
    assert repr(sandbox.HOME) in setup and repr(limits.MAX_KERNEL_EVENTS) in setup
    assert vars(sandbox.Limits()) == {"memory_bytes": limits.MEMORY_BYTES, "processes": limits.PROCESSES,
                                      "file_bytes": limits.SANDBOX_FILE_BYTES, "cpu_seconds": limits.CPU_SECONDS}


def test_every_read_and_write_of_plain_data_names_its_budget(tmp_path):
    """No default a module could set for the whole process (and an import change silently unset): a call without a
    budget is a TypeError."""
    with pytest.raises(TypeError):
        plain.decode([1], str(tmp_path))
    with pytest.raises(TypeError):
        plain.encode([1], str(tmp_path))
    assert not hasattr(plain, "set_default")
    with pytest.raises(TypeError):
        plain.Budget(items=1)  # every size is named: none has a default
