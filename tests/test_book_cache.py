"""The build the book's tests keep (``tests/book_cache.py``) is read again only for the same inputs: its digest
changes with any file git tracks or would track, with this machine's benchmark results and with the installed
JavaScript, and not with what git ignores."""

from __future__ import annotations

import os
import subprocess

import pytest

from book_cache import inputs_digest, keep, kept_build


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("_build/\nnode_modules/\nscratch/\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01.ipynb").write_text("{}")
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    return tmp_path


def test_the_digest_changes_with_every_input_and_not_with_ignored_files(repo):
    seen = [inputs_digest(repo)]
    assert seen[0] == inputs_digest(repo), "the same inputs give the same digest"
    (repo / "notebooks" / "01.ipynb").write_text('{"cells": []}')       # an edited file, not yet added
    seen.append(inputs_digest(repo))
    (repo / "book.md").write_text("# a new page")                      # an untracked file git would track
    seen.append(inputs_digest(repo))
    (repo / "_build" / "bench").mkdir(parents=True)                      # this machine's benchmark results
    (repo / "_build" / "bench" / "results.json").write_text("[]")
    seen.append(inputs_digest(repo))
    (repo / "node_modules").mkdir()                                       # the installed JavaScript
    (repo / "node_modules" / ".package-lock.json").write_text("{}")
    seen.append(inputs_digest(repo))
    (repo / "notebooks" / "01.ipynb").unlink()                            # a tracked file deleted
    seen.append(inputs_digest(repo))
    assert len(set(seen)) == len(seen), "each change gives another digest"
    (repo / "scratch").mkdir()                                            # what git ignores
    (repo / "scratch" / "notes.txt").write_text("x")
    (repo / "_build" / "html").mkdir()
    (repo / "_build" / "html" / "index.html").write_text("x")
    assert inputs_digest(repo) == seen[-1]


def test_outside_a_git_checkout_nothing_is_kept(tmp_path):
    assert inputs_digest(tmp_path) is None


def test_only_the_newest_passed_builds_are_kept(repo):
    failed = kept_build(repo, "f" * 64)  # a build that failed holds no "passed": it is built again, not removed
    failed.mkdir(parents=True)
    builds = [kept_build(repo, str(n) * 64) for n in range(3)]
    for age, build in enumerate(builds):
        build.mkdir(parents=True)
        keep(build)
        os.utime(build / "passed", (age + 1, age + 1))  # passed in this order, long ago
    assert sorted(p.name for p in failed.parent.iterdir()) == sorted([builds[1].name, builds[2].name, failed.name])
