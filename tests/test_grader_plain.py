"""What may come back from a student's kernel: plain data only, read without pickle, links or huge files."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from grader.kernel_side import plain
from grader.replies import read_reply


def roundtrip(value, folder):
    tree = plain.encode(value, folder)
    json.dumps(tree)  # a JSON tree, nothing else
    return plain.decode(tree, str(folder), tensors=True)


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
        plain.decode({"array": "1.npy", "torch": None}, str(tmp_path))


def test_links_and_odd_names_are_refused(tmp_path):
    secret = tmp_path / "secret.npy"
    np.save(secret, np.arange(3))
    os.symlink(secret, tmp_path / "2.npy")
    with pytest.raises(OSError):
        plain.decode({"array": "2.npy", "torch": None}, str(tmp_path))
    with pytest.raises(ValueError, match="expected an array file"):
        plain.decode({"array": "../secret.npy", "torch": None}, str(tmp_path))


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
