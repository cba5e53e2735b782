"""The build the book's tests keep (``tests/book_cache.py``) is read again only for the same inputs: its digest
changes with any file git tracks or would track, with this machine's benchmark results and with the installed
JavaScript, and not with what git ignores. A build that passed is read again, one that failed never is."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

from book_cache import built_book, inputs_digest, keep, kept_build


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


def test_the_digest_changes_with_an_installed_package_and_not_with_a_package_info_on_the_path(repo, monkeypatch):
    """The environment is what is installed, not what ``sys.path`` shows besides (the checkout's own egg-info, on the
    path when Python starts in the repository)."""
    import importlib.metadata
    from types import SimpleNamespace

    (repo / ".gitignore").write_text("_build/\nnode_modules/\n*.egg-info/\n")
    before = inputs_digest(repo)
    (repo / "mine.egg-info").mkdir()
    (repo / "mine.egg-info" / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: mine\nVersion: 1.0\n")
    monkeypatch.syspath_prepend(str(repo))
    assert inputs_digest(repo) == before
    real = importlib.metadata.distributions
    newly = SimpleNamespace(metadata={"Name": "newly-installed"}, version="1.0")
    monkeypatch.setattr(importlib.metadata, "distributions", lambda **kw: [*real(**kw), newly])
    assert inputs_digest(repo) != before


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


class Builder:
    """A stand-in for Jupyter Book: records where it was asked to build, writes an index there, exits ``code``."""

    def __init__(self, code: int = 0):
        self.code, self.outs = code, []

    def __call__(self, out):
        self.outs.append(out)
        (out / "_build" / "html").mkdir(parents=True)
        (out / "_build" / "html" / "index.html").write_text(f"build {len(self.outs)}")
        return subprocess.CompletedProcess([], self.code, stdout="a warning, as an error", stderr="")


def within(seconds: float, call):
    """``call()``'s value (or its exception), or a failure if it has not returned in ``seconds`` (a lock waiting on
    itself)."""
    done = []

    def run():
        try:
            done.append((call(), None))
        except Exception as exc:  # noqa: BLE001 - raised again in the test's thread
            done.append((None, exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert done, f"still waiting after {seconds} s"
    value, error = done[0]
    if error is not None:
        raise error
    return value


@pytest.fixture
def runs(tmp_path_factory):
    """The runs' own folders, outside the repository (as pytest's are)."""
    return tmp_path_factory.mktemp("runs")


def test_a_passed_build_is_read_again_by_the_next_run_and_by_the_same_runs_other_workers(repo, runs):
    build = Builder()
    first = within(60, lambda: built_book(repo, runs / "run1", build))
    assert within(60, lambda: built_book(repo, runs / "run1", build)) == first  # another worker of the run
    assert within(60, lambda: built_book(repo, runs / "run2", build)) == first  # the next run
    assert build.outs == [kept_build(repo, inputs_digest(repo))] and (first / "index.html").read_text() == "build 1"
    (repo / "book.md").write_text("# a new page")
    assert within(60, lambda: built_book(repo, runs / "run3", build)) != first
    assert len(build.outs) == 2


def test_a_failed_build_fails_the_run_with_its_output_and_is_built_from_scratch_the_next_time(repo, runs):
    with pytest.raises(AssertionError, match="a warning, as an error"):
        within(60, lambda: built_book(repo, runs / "run1", Builder(code=1)))
    build = Builder()  # it makes a folder that must not exist yet: the failed build's files are gone
    html = within(60, lambda: built_book(repo, runs / "run2", build))
    assert build.outs == [kept_build(repo, inputs_digest(repo))] and (html / "index.html").read_text() == "build 1"


def test_outside_a_git_checkout_each_run_builds_into_its_own_folder(tmp_path):
    build = Builder()
    (tmp_path / "book").mkdir()
    for run in (tmp_path / "run1", tmp_path / "run2"):
        run.mkdir()
        assert within(60, lambda run=run: built_book(tmp_path / "book", run, build)) == run / "_build" / "html"
    assert build.outs == [tmp_path / "run1", tmp_path / "run2"]
