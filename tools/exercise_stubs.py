"""The stubs ``tools/new_exercise.py`` writes for a new exercise, one function per piece. Each stub that holds
something only its author can write fails its test with a ``TODO`` that says what to write and where:

- the solution notebook's text, answer and hints (``tests/test_exercise_listings.py``, ``tests/test_checks.py``);
- the visible check and its named mistake (``tests/test_checks.py``, ``tests/test_check_mistakes.py``);
- the hidden test (``tests/test_hidden_tests.py``).

The rest is written whole: the map's row, the grade cell, the setup's import, the intro's table, the chapter's
list, ``HOMES``, ``MISTAKES``, ``__all__``, ``FIXED`` and a first wrong answer for the bank (an answer of nothing,
which any check and hidden test rejects).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.exercise_text import points_words, stars


@dataclass(frozen=True)
class Plan:
    """A new exercise: exercise ``n`` of ``assignment`` (``13_looking_inside``), whose answer cell defines ``name``
    (a value worked by hand when ``by_hand``, else a function or a class)."""

    assignment: str
    n: int
    name: str
    points: int
    title: str
    difficulty: int = 1
    by_hand: bool = False
    about: str = ""

    @property
    def number(self) -> str:
        return self.assignment[:2]

    @property
    def slug(self) -> str:
        """``WordTokenizer`` -> ``word_tokenizer``: the name in the grade cell's id and the check's."""
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.name).lower()

    @property
    def answer(self) -> str:
        return f"ex{self.n}_answer"

    @property
    def graded(self) -> str:
        return f"ex{self.n}_{self.slug}"

    @property
    def check(self) -> str:
        return f"check_{self.slug}"

    @property
    def mistakes(self) -> str:
        return f"{self.slug.upper()}_MISTAKES"

    @property
    def where(self) -> str:
        """How the TODOs name the exercise: ``a13.induction_score``."""
        return f"a{self.number}.{self.name}"


def row(p: Plan) -> str:
    """The map's row (``layout/exercises.py``)."""
    probe = "VALUE" if p.by_hand else "CALL"
    return f'    E("{p.number}", "{p.answer}", "{p.graded}", "{p.name}", "{p.check}", {probe}),\n'


def heading(p: Plan) -> str:
    return f"## Exercise {p.n}: {p.title} ({stars(p.difficulty)}, {points_words(p.points)})"


def text(p: Plan) -> str:
    """The exercise's text: its heading, then what its author writes (the TODO fails until it is written)."""
    ask = f"the value `{p.name} = ...`, worked by hand" if p.by_hand else f"`{p.name}(...)`"
    return (f"{heading(p)}\n\nTODO: write the text of {p.where}: what to write ({ask}), its inputs and their "
            "shapes, what it returns.\n\n**Tolerance:** TODO")


def answer(p: Plan) -> str:
    """The answer cell: the solution between nbgrader's markers (a stub that raises until it is written)."""
    todo = f'"TODO: write the solution of {p.where} in solutions/{p.assignment}/{p.assignment}.ipynb"'
    if p.by_hand:
        return (f"# {p.name} = .... Python may serve as a calculator.\n### BEGIN SOLUTION\n"
                f"raise NotImplementedError({todo})\n### END SOLUTION")
    return (f"def {p.name}():\n    ### BEGIN SOLUTION\n    raise NotImplementedError({todo})\n"
            "    ### END SOLUTION")


def hints(p: Plan) -> str:
    return f"<details>\n<summary>Hint 1</summary>\n\nTODO: a hint for {p.where}.\n</details>"


def grade(p: Plan) -> str:
    return f"{p.check}({p.name})"


def table_row(p: Plan) -> str:
    return f"| {p.n} | {p.title} | {stars(p.difficulty)} | {p.points} |"


def list_item(p: Plan) -> str:
    """The chapter's list line: the title, and what the exercise asks if the command was told."""
    title = p.title[0].upper() + p.title[1:]
    return f"{p.n}. **{title}**" + (f": {p.about}" if p.about else "")


def check(p: Plan) -> str:
    """The visible check and its named mistake, before ``MISTAKES`` in ``checks/aNN.py``."""
    todo = f"TODO: write the check for {p.where} in checks/a{p.number}.py"
    wrong = "a wrong value" if p.by_hand else "a wrong function"
    return f'''# ----------------------------------------------------------------------------- exercise {p.n}

{p.mistakes} = [
    Mistake("TODO", "TODO: name a known mistake of {p.where}; its wrong answer is {wrong}", None),
]


def {p.check}(answer) -> None:
    """TODO: what ``{p.name}`` must be, and the tolerance."""
    __tracebackhide__ = True
    raise NotImplementedError("{todo}")


'''


def hidden(p: Plan) -> str:
    """The hidden test, at the end of ``grader/hidden/aNN.py``: one case whose judge fails with the TODO."""
    body = f'    todo = "TODO: write the hidden test for {p.where} in grader/hidden/a{p.number}.py"\n'
    if p.by_hand:
        body += f'    yield Case(todo, reads("{p.name}"), lambda reply: todo)\n'
    else:
        body += (f'    g = generator(seed, "{p.graded}")\n'
                 "    x = torch.randn(3, generator=g)  # the inputs, drawn from the run's seed\n"
                 f'    yield Case(todo, calls("{p.name}", x), lambda reply: todo)\n')
    return f'''

# ----------------------------------------------------------------- exercise {p.n}: {p.title}


def {p.graded}(seed: int):
{body}'''


def bank(p: Plan) -> str:
    """The bank's entry: an answer of nothing, which every check and hidden test must reject (add realistic ones,
    each with the fragment of its hint)."""
    source = f"{p.name} = None\\n" if p.by_hand else f"def {p.name}(*args, **kwargs):\\n    return None\\n"
    return f'    "{p.answer}": [\n        ("an answer of nothing", "{source}", None),\n    ],\n'
