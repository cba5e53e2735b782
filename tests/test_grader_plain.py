"""What may come back from a student's kernel: plain data only, read without pickle, links or huge files."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from grader import limits
from grader.kernel_side import plain
from grader.running.replies import read_reply


def budget():
    """The grader's own budget for a reply (grader/limits.py)."""
    return plain.Budget(**limits.REPLY_BUDGET)


def decode(tree, folder):
    return plain.decode(tree, str(folder), True, budget())


def roundtrip(value, folder):
    tree = plain.encode(value, folder, limits.REPLY_BUDGET["items"])
    json.dumps(tree)  # a JSON tree, nothing else
    return decode(tree, folder)


def test_plain_values_come_back_equal(tmp_path):
    value = {"out": torch.arange(6.0).reshape(2, 3), "n": 3, "x": 0.5, "ok": True, "none": None, "s": "text",
             "shape": (2, 3), "list": [1, [2, 3]], "pairs": {("a", "b"): 4}, "f64": torch.ones(2, dtype=torch.float64),
             "mask": torch.tensor([True, False]), "np": np.arange(3)}
    back = roundtrip(value, tmp_path)
    assert torch.equal(back["out"], value["out"]) and back["f64"].dtype == torch.float64
    assert back["mask"].dtype == torch.bool and back["shape"] == (2, 3) and back["pairs"] == {("a", "b"): 4}
    assert np.array_equal(back["np"], np.arange(3)) and back["list"] == [1, [2, 3]] and back["none"] is None


def test_objects_come_back_as_their_type_name_only(tmp_path):
    back = roundtrip({"f": len, "m": torch.nn.Linear(2, 2)}, tmp_path)
    assert isinstance(back["f"], plain.Unplain) and back["m"].kind == "Linear"


def test_a_pickled_array_is_refused(tmp_path):
    np.save(tmp_path / "1.npy", np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        decode({"array": "1.npy", "torch": None}, tmp_path)


def test_links_and_odd_names_are_refused(tmp_path):
    secret = tmp_path / "secret.npy"
    np.save(secret, np.arange(3))
    os.symlink(secret, tmp_path / "2.npy")
    with pytest.raises(OSError):
        decode({"array": "2.npy", "torch": None}, tmp_path)
    with pytest.raises(ValueError, match="expected an array file"):
        decode({"array": "../secret.npy", "torch": None}, tmp_path)


def test_a_malformed_reply_is_reported_not_fatal(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "reply.json").write_text("[" * 100000)
    assert read_reply(tmp_path / "a")[0] == "malformed"
    (tmp_path / "b").mkdir()
    os.symlink("/etc/hostname", tmp_path / "b" / "reply.json")
    assert read_reply(tmp_path / "b")[0] == "malformed"
    assert read_reply(tmp_path / "missing")[:2] == ("missing", "no reply")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "reply.json").write_text(json.dumps({"ok": {"tuple": [1], "dict": {}, "x": 1}}))
    assert read_reply(tmp_path / "c")[0] == "malformed"


def test_a_pipe_or_a_linked_folder_is_refused_without_waiting(tmp_path):
    """The kernel owns the reply folders: a FIFO must not block the grader, a link must not lead it out."""
    (tmp_path / "out" / "g" / "0").mkdir(parents=True)
    os.mkfifo(tmp_path / "out" / "g" / "0" / "reply.json")
    assert read_reply(tmp_path, "out/g/0")[0] == "malformed"          # returns at once: O_NONBLOCK
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "reply.json").write_text(json.dumps({"ok": 1}))
    os.symlink(outside, tmp_path / "out" / "g" / "1")
    assert read_reply(tmp_path, "out/g/1")[0] == "malformed"          # a linked folder is not followed
    (tmp_path / "out" / "g" / "2").mkdir()
    (tmp_path / "out" / "g" / "2" / "reply.json").write_text(json.dumps({"ok": {"array": "1.npy", "torch": None}}))
    os.symlink(outside / "x.npy", tmp_path / "out" / "g" / "2" / "1.npy")
    np.save(outside / "x.npy", np.arange(2))
    assert read_reply(tmp_path, "out/g/2")[0] == "malformed"          # nor a linked array


def test_one_array_named_many_times_costs_each_time(tmp_path):
    """Every reference counts against the reply's budget: one 8 MiB file named 30 times is over 32 MiB."""
    np.save(tmp_path / "1.npy", np.zeros(2**20))  # 8 MiB of float64
    tree = [{"array": "1.npy", "torch": None}] * 30
    with pytest.raises(ValueError, match="budget"):
        decode(tree, tmp_path)
    assert len(decode(tree[:3], tmp_path)) == 3


def test_an_array_header_that_promises_more_than_the_budget_is_refused_before_reading(tmp_path):
    with open(tmp_path / "1.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (10**9,)})
        f.write(b"\0" * 64)
    with pytest.raises(ValueError, match="budget"):
        decode({"array": "1.npy", "torch": None}, tmp_path)


def test_a_short_array_file_is_refused(tmp_path):
    with open(tmp_path / "1.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (100,)})
        f.write(b"\0" * 64)
    with pytest.raises(ValueError, match="does not hold"):
        decode({"array": "1.npy", "torch": None}, tmp_path)


def test_arrays_are_never_dict_keys(tmp_path):
    np.save(tmp_path / "1.npy", np.arange(3))
    with pytest.raises(ValueError, match="key"):
        decode({"items": [[{"array": "1.npy", "torch": None}, 1]]}, tmp_path)


@pytest.mark.parametrize("tree,what", [
    ([0] * 20_000, "items"),
    ({"dict": {str(i): 0 for i in range(2_000)}}, "keys"),
    (json.loads("[" * 40 + "]" * 40), "deeper"),
])
def test_values_keys_and_depth_are_bounded(tree, what, tmp_path):
    with pytest.raises(ValueError, match=what):
        decode(tree, tmp_path)


def test_a_reply_file_over_its_size_is_malformed(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "reply.json").write_text('{"ok": "' + "x" * (limits.REPLY_BUDGET["json_bytes"] + 10) + '"}')
    assert read_reply(tmp_path / "r")[0] == "malformed"


def test_forbidden_calls_reported_are_only_names_the_grader_watched(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "reply.json").write_text(json.dumps({"ok": 1, "ran": ["torch.x", "<script>", "torch.y"]}))
    assert read_reply(tmp_path / "r", watched=("torch.y", "torch.z")).ran == ("torch.y",)


def test_numbers_in_arrays_are_bounded(tmp_path):
    """A judge may turn a reply's array into Python numbers: 5 million booleans (5 MB, within the bytes) are
    refused before anyone does."""
    np.save(tmp_path / "1.npy", np.zeros(5_000_000, dtype=bool))
    with pytest.raises(ValueError, match="elements"):
        decode({"array": "1.npy", "torch": "torch.bool"}, tmp_path)


def test_a_reply_cannot_choose_a_larger_dtype_past_its_budget(tmp_path):
    """The reply names the tensor's dtype: 3.6 MB of float16 made float64 costs 14.4 MB more; it is charged, so two
    such references are over the reply's 32 MiB."""
    np.save(tmp_path / "1.npy", np.zeros(1_800_000, dtype=np.float16))
    with pytest.raises(ValueError, match="array_bytes"):
        decode([{"array": "1.npy", "torch": "torch.float64"}] * 2, tmp_path)
    assert decode({"array": "1.npy", "torch": "torch.float64"}, tmp_path).dtype == torch.float64


def test_a_dtype_name_is_looked_up_in_a_fixed_table(tmp_path):
    """A name that is not one of the table's dtypes leaves the array as it came (no getattr on torch)."""
    np.save(tmp_path / "1.npy", np.zeros(3))
    assert decode({"array": "1.npy", "torch": "torch._dynamo"}, tmp_path).dtype == torch.float64
