"""Reading a submitted file (grader/collecting/collect.py): what it says about a broken file quotes nothing of it, and
the file is read through its row's own reader, never by opening its path again."""

import json
import os
import zipfile

import nbformat

from grader import limits
from grader.collecting import collect

A = "04_queries_keys_values"


def _one(folder, name: str, data: bytes):
    (folder / name).write_bytes(data)
    return next(s for s in collect.gather(folder, A) if s.file_name == name)


def test_an_invalid_notebook_is_named_without_quoting_it(tmp_path):
    """nbformat's validation error quotes the file (a cell key a student wrote); the note names its type only."""
    bad = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
           "cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [], "execution_count": None,
                      "id": "a", '=HYPERLINK("http://x","MARKER")': 1}]}
    sub = _one(tmp_path, "eve.ipynb", json.dumps(bad).encode())
    assert collect.read_notebook(sub) is None
    assert sub.problems and not any("MARKER" in p or "HYPERLINK" in p for p in sub.problems), sub.problems


def test_a_link_swapped_in_after_gathering_is_refused_not_followed(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(nbformat.v4.new_notebook()), encoding="utf-8")
    (tmp_path / "in").mkdir()
    sub = _one(tmp_path / "in", "frank.ipynb", json.dumps(nbformat.v4.new_notebook()).encode())
    (tmp_path / "in" / "frank.ipynb").unlink()
    (tmp_path / "in" / "frank.ipynb").symlink_to(secret)
    assert collect.read_notebook(sub) is None
    assert [p for p in sub.problems if p.startswith("not read: it is not a regular file any more")], sub.problems


def test_a_notebook_in_a_zip_is_read_in_memory(tmp_path):
    with zipfile.ZipFile(tmp_path / "class.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("grace.ipynb", json.dumps(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])))
    [sub] = collect.gather(tmp_path / "class.zip", A)
    nb = collect.read_notebook(sub)
    assert nb is not None and nb.cells[0].source == "x = 1" and sub.problems == []
    assert os.listdir(tmp_path) == ["class.zip"]


def test_a_file_over_the_size_cap_is_read_no_further_than_the_cap(tmp_path):
    sub = _one(tmp_path, "heidi.ipynb", b" " * (limits.MAX_FILE_BYTES + 100))
    assert len(sub.read()) == limits.MAX_FILE_BYTES + 1
    assert collect.read_notebook(sub) is None
    assert sub.problems == [f"not graded: the file is larger than {limits.MAX_FILE_BYTES // 2**20} MiB"]


def test_a_row_not_to_be_graded_is_never_read(tmp_path):
    os.symlink("elsewhere", tmp_path / "ivan.ipynb")
    [sub] = collect.gather(tmp_path, A)
    calls = []
    sub.reader = lambda: calls.append(1) or b"{}"
    assert collect.read_and_rebuild(sub, release=None) is None
    assert calls == [] and sub.problems == ["a symbolic link: not read"]
