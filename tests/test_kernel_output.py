"""What a kernel sends back is bounded by all it carries: an output's metadata and an error's traceback count
toward a cell's limit as its text does (a flood of them cannot grow the grader's memory). Consecutive prints
to one stream are kept as one block of text, however the kernel flushed them."""

from __future__ import annotations

import pytest

from grader.limits import MAX_OUTPUT_CHARS
from grader.running import sandbox
from grader.running.kernel import Kernel

pytestmark = pytest.mark.slow

def run_in_kernel(code: str):
    """``code`` run in a grading kernel of its own box: its :class:`~grader.running.kernel.Outcome`."""
    box = sandbox.new_box()
    sandbox.give(box / "out")
    kernel = Kernel(box)
    try:
        kernel.start()
        return kernel.execute(code, 60)
    finally:
        kernel.stop()
        sandbox.remove_box(box)


FLOOD = """
from IPython.display import display
for i in range(40):
    display({"text/plain": "x"}, raw=True, metadata={"big": "y" * 1_000_000})
"""


def test_a_flood_of_metadata_is_cut_at_the_cells_limit():
    out = run_in_kernel(FLOOD)
    kept = sum(len(str(o.get("metadata", ""))) for o in out.outputs)
    assert out.status == "ok" and out.flooded
    assert kept <= MAX_OUTPUT_CHARS, kept  # the old count (text and data only) kept all 40 MB of it


SPLIT_PRINTS = """
import sys, time
for part in ("ONE:", " refused", "\\n"):
    sys.stdout.write(part)
    sys.stdout.flush()          # each part its own stream message, as a loaded machine may send them
    time.sleep(0.05)
"""


def test_consecutive_prints_to_one_stream_are_one_block():
    """A loaded kernel sent ``print("ONE:", "refused")`` as two messages, and the feedback page showed two blocks."""
    out = run_in_kernel(SPLIT_PRINTS)
    assert [(o["name"], o["text"]) for o in out.outputs] == [("stdout", "ONE: refused\n")]


FORGED_STREAMS = """
print("first")
import sys; sys.stdout.flush()
_k = get_ipython().kernel
for _content in ({"name": "stdout", "text": ["a list", "of text"]}, {"name": 5, "text": 7}, {"text": "no name"}, {}):
    _k.session.send(_k.iopub_socket, "stream", _content, parent=_k.get_parent("shell"), ident=_k._topic("stream"))
print("after")
"""


def test_a_forged_stream_message_is_dropped_or_kept_apart_never_fatal():
    """A stream whose text is a list (nbformat takes it) used to meet ``+=`` on the last print's text: TypeError,
    and the whole submission was lost; one without a name or content stopped the cell's reading."""
    out = run_in_kernel(FORGED_STREAMS)
    assert out.status == "ok"
    texts = [o.get("text") for o in out.outputs]
    assert texts[0] == "first\n" and texts[-1] == "after\n", texts


def test_a_page_carries_only_stdout_or_stderr_as_a_streams_name():
    """A stream's name is the kernel's word: a forged one (markup in it) is not written to the feedback page."""
    from grader.recording.feedback import sanitize

    forged = {"output_type": "stream", "name": 'x"><script>alert(1)</script>', "text": "hi\n"}
    assert [dict(o) for o in sanitize(forged)] == [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
    assert sanitize({"output_type": "stream", "name": "stderr", "text": "e"})[0]["name"] == "stderr"


REPLAYED_AND_HUGE = """
_k = get_ipython().kernel
_msg = _k.session.msg("stream", {"name": "stdout", "text": "once\\n"}, parent=_k.get_parent("shell"))
_parts = _k.session.serialize(_msg, ident=_k._topic("stream"))
_k.iopub_socket.send_multipart(_parts)
_k.iopub_socket.send_multipart(_parts)           # the same signature again: the client refuses it
print("after")
raise type("E" * 1_000_000, (Exception,), {})("\\n" * 1_000_000 + "the end")
"""


def test_a_replayed_message_and_a_huge_error_cost_neither_the_cell_nor_the_memory():
    """A message sent twice raised ValueError ("Duplicate Signature") out of the grader's reading, and the whole
    submission was lost; an error's name and message were kept whole (a million characters) and split in full."""
    out = run_in_kernel(REPLAYED_AND_HUGE)
    assert [o.get("text") for o in out.outputs if o.get("output_type") == "stream"] == ["once\nafter\n"]
    assert out.status == "error" and len(out.error) <= 320, len(out.error)
