"""Reading a submitted file (grader/collect.py): what it says about a broken file quotes nothing of it."""


def test_an_invalid_notebook_is_named_without_quoting_it(tmp_path):
    """nbformat's validation error quotes the file (a cell key a student wrote); the note names its type only."""
    import json

    from grader.collect import Submission, read_notebook

    bad = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
           "cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [], "execution_count": None,
                      "id": "a", '=HYPERLINK("http://x","MARKER")': 1}]}
    path = tmp_path / "eve.ipynb"
    path.write_text(json.dumps(bad), encoding="utf-8")
    sub = Submission("eve", path)
    assert read_notebook(sub) is None
    assert sub.problems and not any("MARKER" in p or "HYPERLINK" in p for p in sub.problems), sub.problems
