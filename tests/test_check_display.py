"""A failed check reads as a message in JupyterLab (and on the grader's feedback page, which shows the kernel's
outputs): no traceback into the checker; an error raised by the student's own code keeps its traceback.

The cells run in a real IPython shell, which renders an exception as JupyterLab's kernel does (both call
``InteractiveShell.showtraceback``); the text it prints is what the notebook's error output holds.
"""

from __future__ import annotations

import re

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from checks import CheckFailed, check_masked_attention, check_masked_row

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def shell():
    return InteractiveShell.instance()


def shown(shell, code: str) -> str:
    """What the shell shows for a cell: its printed output and the error it renders, without colours."""
    with capture_output() as out:
        result = shell.run_cell(code)
    assert not result.success, "the cell was expected to fail"
    return ANSI.sub("", out.stdout + out.stderr)


def test_a_failed_check_shows_its_message_alone(shell):
    text = shown(shell, "from checks import check_masked_row\n"
                        "check_masked_row([0.25, 0.25, 0.25, 0.25])")
    assert "✗ masked row" in text or "✗" in text.splitlines()[0]
    assert "values are wrong" in text
    assert "core.py" not in text and "Traceback" not in text and "raise CheckFailed" not in text
    assert "CheckFailed" not in text  # the message is the whole story


def test_an_error_in_the_students_code_keeps_its_traceback(shell):
    text = shown(shell, "from checks import check_masked_attention\n"
                        "def masked_attention(q, k, v, mask):\n"
                        "    scores = q @ k.transpose(-2, -1)\n"
                        "    return scores / 0 + undefined_name\n"
                        "check_masked_attention(masked_attention)")
    assert "NameError" in text and "undefined_name" in text  # the student's error, where it happened ...
    assert "masked_attention" in text and "return scores / 0 + undefined_name" in text
    last = text.rstrip().splitlines()[-1].strip()
    assert last == "fix the error above, then run this cell again"  # ... then the message
    assert "raised NameError" in text
    assert "core.py" not in text and "checks/a07.py" not in text  # and none of the checker's frames


def test_other_errors_keep_ipythons_full_traceback(shell):
    text = shown(shell, "def f():\n    return 1 / 0\nf()")
    assert "ZeroDivisionError" in text and "Traceback" in text and "return 1 / 0" in text


def test_the_render_is_the_message_and_the_students_error():
    with pytest.raises(CheckFailed) as plain:
        check_masked_row([0.25, 0.25, 0.25, 0.25])
    assert plain.value._render_traceback_() == [str(plain.value)]

    def masked_attention(q, k, v, mask):
        raise RuntimeError("my own bug")

    with pytest.raises(CheckFailed) as theirs:
        check_masked_attention(masked_attention)
    lines = ANSI.sub("", "\n".join(theirs.value._render_traceback_()))
    assert 'raise RuntimeError("my own bug")' in lines and re.search(r"RuntimeError:? +my own bug", lines)
    assert "core.py" not in lines and lines.endswith(str(theirs.value))


def test_a_kernel_stores_the_message_as_the_error_output():
    """The error output a Jupyter kernel stores (what JupyterLab shows and the feedback page copies)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from checks import check_masked_row\ncheck_masked_row([0.25, 0.25, 0.25, 0.25])")])
    with pytest.raises(CellExecutionError):
        NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    error = next(o for o in nb.cells[0].outputs if o.output_type == "error")
    text = ANSI.sub("", "\n".join(error.traceback))
    assert error.ename == "CheckFailed" and "values are wrong" in text
    assert "core.py" not in text and "Traceback" not in text and "check_masked_row(" not in text
