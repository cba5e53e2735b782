"""``python -m tools.new_exercise``: it refuses bad arguments by name, its writers put each piece where the map and
the listings expect it in every assignment, and (slow, on a copy of the repository) a new exercise fails its
targeted tests with a TODO that names each piece to write, and passes them once the answer, its check and its hidden
test are written."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys

import nbformat
import pytest

from layout import exercises
from layout.paths import CHECKS, NOTEBOOKS, ROOT, assignments, notebook_path
from tools import exercise_stubs as stubs
from tools import new_exercise, notebook_edit, source_edit
from tools.exercise_stubs import Plan
from tools.exercise_text import Listed, chapter_list, heading, intro_table

from conftest import venv_env

LAST = assignments()[-1]
COPIED = ("tools", "layout", "transformer", "checks", "grader", "tests", "solutions", "notebooks", "exercises",
          "conftest.py", "pyproject.toml", "nbgrader_config.py")


@pytest.mark.parametrize("argv,named,given", [
    (["a99", "thing", "--points", "1"], "ASSIGNMENT", "'a99'"),
    ([LAST, exercises.of(LAST)[-1].defines, "--points", "1"], "NAME", repr(exercises.of(LAST)[-1].defines)),
    ([LAST, "attention", "--points", "1"], "NAME", "'attention'"),  # check_attention exists (assignment 04)
    ([LAST, "not a name", "--points", "1"], "NAME", "'not a name'"),
    ([LAST, "thing", "--points", "0"], "--points", "'0'"),
    ([LAST, "thing", "--points", "1.5"], "--points", "'1.5'"),
    ([LAST, "thing", "--points", "two"], "--points", "'two'"),
    ([LAST, "thing", "--points", "1", "--difficulty", "4"], "--difficulty", "'4'"),
    ([LAST, "thing", "--points", "1", "--title", "a | b"], "--title", "'a | b'"),
])
def test_bad_arguments_are_refused_by_name_with_what_was_expected(argv, named, given, capsys):
    assert new_exercise.main(argv) == 2
    message = capsys.readouterr().err
    assert f"{named}: expected " in message and message.rstrip().endswith(f"got {given}"), message


def plans(assignment: str) -> list[Plan]:
    n = len(exercises.of(assignment)) + 1
    return [Plan(assignment, n, "new_thing", 2, "a new thing", 2, False, "what it asks."),
            Plan(assignment, n, "NewThing", 1, "a new thing, by hand", 1, True)]


@pytest.mark.parametrize("assignment", assignments())
def test_the_source_writers_add_each_name_where_it_is_read(assignment):
    """On every assignment's sources, as strings: the results parse, keep to 120 characters, and name the piece."""
    n = assignment[:2]
    sources = {change: path.read_text() for change, path in [
        (source_edit.add_row, ROOT / "layout" / "exercises.py"),
        (source_edit.add_check, CHECKS / f"a{n}.py"),
        (source_edit.add_home, CHECKS / "__init__.py"),
        (source_edit.add_hidden, ROOT / "grader" / "hidden" / f"a{n}.py"),
        (source_edit.add_bank, ROOT / "tests" / "bank" / f"a{n}.py")]}
    for p in plans(assignment):
        new = {change: change(source, p) for change, source in sources.items()}
        for change, source in new.items():
            tree = ast.parse(source)
            added = set(source.splitlines()) - set(sources[change].splitlines())
            assert max(map(len, added)) <= source_edit.WIDTH, (change.__name__, p)
            assert source != sources[change], change.__name__
        row = new[source_edit.add_row]
        last = f'"{n}", "{exercises.of(assignment)[-1].answer}"'
        assert stubs.row(p) in row and row.index(stubs.row(p)) > row.index(last)
        assert f'"{p.check}": {p.mistakes},' in new[source_edit.add_check]
        tree = ast.parse(new[source_edit.add_check])
        exported = ast.literal_eval(source_edit.top_level(tree, "__all__").value)
        assert p.check in exported and "Mistake" in new[source_edit.add_check].split("__all__")[0]
        homes = ast.literal_eval(source_edit.top_level(ast.parse(new[source_edit.add_home]), "HOMES").value)
        assert p.check in homes[f"a{n}"] and list(homes[f"a{n}"]) == sorted(homes[f"a{n}"])
        assert f"def {p.graded}(seed: int):" in new[source_edit.add_hidden]
        fixed = ast.literal_eval(source_edit.top_level(ast.parse(new[source_edit.add_hidden]), "FIXED").value) \
            if p.by_hand else set()
        assert (p.graded in fixed) == p.by_hand
        wrong = source_edit.top_level(ast.parse(new[source_edit.add_bank]), "WRONG").value
        assert wrong.keys[-1].value == p.answer


@pytest.mark.parametrize("assignment", assignments())
def test_the_notebook_writers_add_the_cells_the_table_row_and_the_list_item(assignment, tmp_path):
    solution, chapter = tmp_path / "solution.ipynb", tmp_path / "chapter.ipynb"
    shutil.copy(notebook_path("solutions", assignment), solution)
    shutil.copy(NOTEBOOKS / f"{assignment}.ipynb", chapter)
    p = plans(assignment)[0]
    before = intro_table(nbformat.read(solution, as_version=4))
    nb = nbformat.read(notebook_edit.add_to_solution(solution, p), as_version=4)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    assert ids[-5:] == [f"ex{p.n}_text", p.answer, f"ex{p.n}_hints", p.graded, "outro"]
    assert nb.cells[-2].metadata.nbgrader.points == p.points and nb.cells[-2].metadata.nbgrader.locked
    assert "### BEGIN SOLUTION" in nb.cells[-4].source and "### END SOLUTION" in nb.cells[-4].source
    assert heading(nb.cells[-5].source) == Listed(p.n, p.title, "★★☆", 2.0)
    assert intro_table(nb) == [*before, Listed(p.n, p.title, "★★☆", 2.0)]
    setup = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    imported = ast.parse(setup).body
    assert any(isinstance(s, ast.ImportFrom) and p.check in [a.name for a in s.names] for s in imported)
    items = chapter_list(nbformat.read(notebook_edit.add_to_chapter(chapter, p), as_version=4))
    assert items == [*[(i, t) for i, t in chapter_list(nbformat.read(NOTEBOOKS / f"{assignment}.ipynb",
                                                                     as_version=4))], (p.n, "A new thing")]


# ------------------------------------------------------------------ end to end, on a copy of the repository

# CONTRIBUTING.md's targeted tests ("Adding an exercise"), on the exercise's assignment, its check and the bank's
# wrong answer ("an answer of nothing"): no other assignment's tests
TARGETED = ["tests/test_exercise_map.py", "tests/test_exercise_listings.py", "tests/test_checks.py",
            "tests/test_check_mistakes.py", "tests/test_checks_import.py", "tests/test_hidden_tests.py",
            "tests/test_exercise_text.py", "tests/test_exercise_promises.py", "tests/test_forbidden.py"]


def run(cwd, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=venv_env(), capture_output=True, text=True,
                          timeout=600)


def targeted(copy, p: Plan) -> subprocess.CompletedProcess:
    return run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TARGETED, "-k",
               f"{p.assignment} or {p.number}-ex{p.n} or {p.check} or ({p.answer} and nothing)")


def fill(copy, p: Plan) -> None:
    """The three pieces an author writes, for a trivial exercise: 6 times 7, by hand."""
    path = notebook_path("solutions", p.assignment).relative_to(ROOT)
    nb = nbformat.read(copy / path, as_version=4)
    written = {f"ex{p.n}_text": stubs.heading(p) + f"\n\nWrite `{p.name}`, six times seven.\n\n**Tolerance:** "
                                                   "$10^{-3}$.",
               p.answer: f"### BEGIN SOLUTION\n{p.name} = 6 * 7\n### END SOLUTION",
               f"ex{p.n}_hints": "<details>\n<summary>Hint 1</summary>\n\nSeven sixes.\n</details>"}
    for c in nb.cells:
        c.source = written.get(c.metadata.get("nbgrader", {}).get("grade_id"), c.source)
    nbformat.write(nb, copy / path)
    checks = copy / "checks" / f"a{p.number}.py"
    source = source_edit.add_import(checks.read_text(), "core", ["compare", "report", "values_of"], level=1)
    checks.write_text(source.replace(stubs.check(p), f'''{p.mistakes} = [
    Mistake("six sixes", "this is 6 times 6", torch.tensor(36.0, dtype=torch.float64)),
]


def {p.check}(answer) -> None:
    """``{p.name}``: six times seven, within 1e-3."""
    __tracebackhide__ = True
    report("{p.name}", compare(answer, torch.tensor(42.0, dtype=torch.float64), (), atol=1e-3, rtol=0.0,
                              mistakes=values_of({p.mistakes}), what="{p.name}"))


'''))
    hidden = copy / "grader" / "hidden" / f"a{p.number}.py"
    hidden.write_text(hidden.read_text().replace(stubs.hidden(p), f'''


def {p.graded}(seed: int):
    yield Case("{p.name}: six times seven", reads("{p.name}"),
               lambda got: None if isinstance(got, (int, float)) and abs(got - 42) <= 1e-3 else "{p.name} is wrong")
'''))


@pytest.mark.slow
def test_a_new_exercise_fails_its_tests_with_todos_until_its_three_pieces_are_written(tmp_path):
    copy = tmp_path / "repo"
    for name in COPIED:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(
            ROOT / name, copy / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if (ROOT / name).is_dir()
                                         else {}))
    p = Plan(LAST, len(exercises.of(LAST)) + 1, "six_sevens", 1, "six times seven, by hand", 1, True)
    made = run(copy, "-m", "tools.new_exercise", f"a{p.number}", p.name, "--points", "1", "--by-hand",
               "--title", p.title)
    assert made.returncode == 0, made.stderr
    for path in ("layout/exercises.py", f"solutions/{LAST}/{LAST}.ipynb", f"notebooks/{LAST}.ipynb",
                 f"checks/a{p.number}.py", "checks/__init__.py",
                 f"grader/hidden/a{p.number}.py", f"tests/bank/a{p.number}.py", f"exercises/{LAST}/{LAST}.ipynb"):
        assert f"wrote {path}" in made.stdout and (copy / path).read_bytes() != (ROOT / path).read_bytes(), path
    assert p.answer in (copy / "exercises" / LAST / f"{LAST}.ipynb").read_text()
    linted = ("tools", "layout", "transformer", "checks", "grader", "tests")
    assert run(copy, "-m", "ruff", "check", *linted).returncode == 0

    before = targeted(copy, p)
    assert before.returncode == 1, before.stdout[-3000:]
    for todo in (f"TODO: write the text of {p.where}", f"TODO: write the solution of {p.where}",
                 f"TODO: write the check for {p.where}", f"TODO: write the hidden test for {p.where}"):
        assert todo in before.stdout, todo
    fill(copy, p)
    after = targeted(copy, p)
    assert after.returncode == 0, after.stdout[-3000:]
