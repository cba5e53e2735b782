"""Collecting submissions (grader/collecting/collect.py, grader/collecting/intake.py, grader/collecting/platforms.py):
the platforms' downloads, ids that never take another file's name, and a folder or zip read as hostile input. Fast:
nothing is graded."""

import itertools
import os
import stat
import threading
import time
import tracemalloc
import zipfile

import pytest

from grader import limits
from grader.collecting import collect

A = "04_queries_keys_values"
NB = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def make(root, files: dict):
    """``files`` (relative path -> bytes) written below ``root``."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def zipped(path, files: dict):
    """``files`` as members of the zip ``path`` (no directory entries, as Canvas and Moodle write them)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for rel, data in files.items():
            z.writestr(rel, data)
    return path


def source(tmp_path, files: dict, how: str):
    return make(tmp_path / "dl", files) if how == "folder" else zipped(tmp_path / "dl.zip", files)


def rows_by_file(subs):
    return {s.source: s for s in subs}


def in_time(fn, seconds=10.0):
    """``fn()`` run in a thread: its result (or exception), or a failure if it has not returned within ``seconds``."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still blocked after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


# Canvas's "Download Submissions" names every file <sortable name>[_LATE]_<user id>_<file id>_<file name>, the
# sortable name lower-cased with spaces and punctuation removed (accents kept), and a file name uploaded again gets
# -1, -2 before its extension: canvas-lms lib/content_zipper.rb (get_filename, add_upload_submission,
# sanitize_user_name) and app/models/attachment.rb (make_unique_filename),
# https://github.com/instructure/canvas-lms/blob/master/lib/content_zipper.rb
CANVAS = {
    f"müllerjosé_1001_5001_{A}.ipynb": NB,                 # José Müller's first upload
    f"müllerjosé_LATE_1001_5002_{A}-1.ipynb": NB,          # ... uploaded again, late: the one graded
    f"smithanna_1002_5003_{A}.ipynb": NB,                  # two students named Anna Smith
    f"smithanna_1003_5004_{A}.ipynb": NB,
    "leeyu_1004_5005_essay.pdf": b"%PDF-1.4",              # a PDF and no notebook
    f"anon_x7k2p_5006_{A}.ipynb": NB,                      # an anonymous assignment's name and id
}


@pytest.mark.parametrize("how", ["folder", "zip"])
def test_a_canvas_download_keeps_canvas_ids_and_grades_each_students_latest(tmp_path, how):
    subs = rows_by_file(collect.gather(source(tmp_path, CANVAS, how), A))
    assert len(subs) == len(CANVAS)
    latest, first = subs[f"müllerjosé_LATE_1001_5002_{A}-1.ipynb"], subs[f"müllerjosé_1001_5001_{A}.ipynb"]
    assert (latest.student, latest.platform, latest.platform_id, latest.name) == \
        ("mullerjose_1001", "canvas", "1001", "müllerjosé")
    assert (latest.status, latest.late, latest.attempt, latest.problems) == ("graded", True, 1, [])
    assert (first.status, first.late, first.attempt) == ("superseded", False, 0)
    assert first.student != latest.student and latest.file_name in " ".join(first.problems)
    annas = [subs[f"smithanna_{uid}_{fid}_{A}.ipynb"] for uid, fid in ((1002, 5003), (1003, 5004))]
    assert [(s.student, s.status, s.problems) for s in annas] == \
        [("smithanna_1002", "graded", []), ("smithanna_1003", "graded", [])]
    pdf = subs["leeyu_1004_5005_essay.pdf"]
    assert (pdf.student, pdf.status, pdf.platform_id) == ("leeyu_1004", "not read", "1004")
    assert pdf.problems == ["no notebook in this submission: not read"]
    anon = subs[f"anon_x7k2p_5006_{A}.ipynb"]
    assert (anon.student, anon.platform_id, anon.name, anon.status) == ("anon_x7k2p", "anon_x7k2p", "", "graded")


def test_of_a_canvas_students_files_the_highest_attempt_then_file_id_is_graded(tmp_path):
    files = {f"doejane_7_90_{A}-2.ipynb": NB, f"doejane_7_95_{A}-1.ipynb": NB, f"doejane_7_80_{A}.ipynb": NB}
    subs = rows_by_file(collect.gather(make(tmp_path, files), A))
    assert [n for n, s in subs.items() if s.status == "graded"] == [f"doejane_7_90_{A}-2.ipynb"]
    files = {f"doejane_7_90_{A}.ipynb": NB, "doejane_7_95_notes.ipynb": NB}
    subs = rows_by_file(collect.gather(make(tmp_path / "b", files), A))
    assert [n for n, s in subs.items() if s.status == "graded"] == ["doejane_7_95_notes.ipynb"]


# Moodle's "Download all submissions" writes, per student, a folder <Full name>_<participant id>_assignsubmission_file
# (with a trailing _ before Moodle 4.1) holding the files as uploaded, or, "download submissions in folders" off, the
# files <Full name>_<participant id>_assignsubmission_file_<file name>; a "_" in a name is written as a space:
# moodle mod/assign/classes/downloader.php (get_student_prefix, load_submissionplugin_filelist),
# https://github.com/moodle/moodle/blob/main/mod/assign/classes/downloader.php
MOODLE_FOLDERS = {
    f"José Müller_17_assignsubmission_file/{A}.ipynb": NB,
    f"José Müller_18_assignsubmission_file/{A}.ipynb": NB,     # another José Müller
    "Zoë O'Brien_19_assignsubmission_onlinetext/onlinetext.html": b"<p>hi</p>",
    f"Ana Lima_20_assignsubmission_file/{A}.ipynb": NB,
    "Ana Lima_20_assignsubmission_file/scratch.ipynb": NB,     # two notebooks: the release's name is graded
    f"Bo Li_21_assignsubmission_file_/work/{A}.ipynb": NB,     # Moodle before 4.1, a subfolder kept
}
MOODLE_FILES = {
    f"José Müller_17_assignsubmission_file_{A}.ipynb": NB,
    f"José Müller_18_assignsubmission_file_{A}.ipynb": NB,
    "Zoë O'Brien_19_assignsubmission_onlinetext_onlinetext.html": b"<p>hi</p>",
    f"Ana Lima_20_assignsubmission_file_{A}.ipynb": NB,
    "Ana Lima_20_assignsubmission_file_scratch.ipynb": NB,
    f"Bo Li_21_assignsubmission_file_{A}.ipynb": NB,
}


@pytest.mark.parametrize("layout", [MOODLE_FOLDERS, MOODLE_FILES], ids=["folders", "files"])
@pytest.mark.parametrize("how", ["folder", "zip"])
def test_a_moodle_download_keeps_participant_ids_and_names_with_accents(tmp_path, how, layout):
    subs = collect.gather(source(tmp_path, layout, how), A)
    graded = {s.student: s for s in subs if s.status == "graded"}
    assert sorted(graded) == ["Ana_Lima_20", "Bo_Li_21", "Jose_Muller_17", "Jose_Muller_18"]
    assert (graded["Jose_Muller_17"].name, graded["Jose_Muller_17"].platform_id) == ("José Müller", "17")
    assert {s.platform for s in subs} == {"moodle"} and all(not s.problems for s in graded.values())
    assert graded["Ana_Lima_20"].file_name.endswith(f"_{A}.ipynb" if layout is MOODLE_FILES else f"/{A}.ipynb"[1:])
    scratch = next(s for s in subs if s.file_name.endswith("scratch.ipynb"))
    assert scratch.status == "superseded" and scratch.platform_id == "20"
    zoe = next(s for s in subs if s.platform_id == "19")
    assert (zoe.status, zoe.name) == ("not read", "Zoë O'Brien")
    assert zoe.problems == ["no notebook in this submission: not read"]
    assert len(subs) == 6


@pytest.mark.parametrize("given", ["parent", "submitted"])
def test_nbgraders_layout_one_student_folder_each(tmp_path, given):
    make(tmp_path, {f"submitted/alice/{A}/{A}.ipynb": NB,
                    f"submitted/alice/{A}/.ipynb_checkpoints/{A}-checkpoint.ipynb": NB,
                    f"submitted/bob/{A}/{A}.ipynb": NB,
                    "submitted/bob/05_other/05_other.ipynb": NB,            # another assignment: not this one's
                    f"submitted/carol/{A}/notes.txt": b"no notebook"})
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "submitted" / "mallory").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    subs = {s.student: s for s in collect.gather(tmp_path if given == "parent" else tmp_path / "submitted", A)}
    assert sorted(subs) == ["alice", "bob", "carol", "mallory"]
    assert [(subs[s].status, subs[s].platform, subs[s].platform_id) for s in ("alice", "bob")] == \
        [("graded", "nbgrader", "alice"), ("graded", "nbgrader", "bob")]
    assert subs["carol"].status == "not read" and subs["carol"].problems == ["no notebook in this submission: not read"]
    assert subs["mallory"].status == "not read" and subs["mallory"].problems == ["a symbolic link: not read"]


# Mallory's place holds her notebook and, below it, folders named like her classmates' places, a Moodle submission
# folder and a Canvas download's file name. nbgrader's submit and collect copy a student's folder whole
# (shutil.copytree), so all of it arrives. Before, the identity was read from any depth: bob's own notebook was
# "superseded" by her blank copy, zed's lost a tie of names, and ghost, who handed nothing in, got her solved one.
MALLORY = {
    f"submitted/alice/{A}/{A}.ipynb": NB,
    f"submitted/bob/{A}/my_work.ipynb": NB,
    f"submitted/zed/{A}/{A}.ipynb": NB,
    f"submitted/mallory/{A}/{A}.ipynb": NB,
    f"submitted/mallory/{A}/bob/{A}/{A}.ipynb": b"blank",
    f"submitted/mallory/{A}/zed/{A}/{A}.ipynb": b"blank",
    f"submitted/mallory/{A}/ghost/{A}/{A}.ipynb": b"solved",
    f"submitted/mallory/{A}/Bob Lee_12_assignsubmission_file/{A}.ipynb": b"blank",
    f"submitted/mallory/{A}/x/bob_12_34_{A}.ipynb": b"blank",
    f"submitted/mallory/05_other/Zed Z_13_assignsubmission_file/{A}.ipynb": b"blank",
}


@pytest.mark.parametrize("how", ["folder", "zip"])
def test_everything_below_a_students_folder_is_theirs_at_any_depth(tmp_path, how):
    subs = collect.gather(source(tmp_path, MALLORY, how), A)
    graded = {s.student: s.source for s in subs if s.status == "graded"}
    assert graded == {"alice": f"submitted/alice/{A}/{A}.ipynb", "bob": f"submitted/bob/{A}/my_work.ipynb",
                      "zed": f"submitted/zed/{A}/{A}.ipynb", "mallory": f"submitted/mallory/{A}/{A}.ipynb"}
    assert {(s.platform, s.platform_id) for s in subs} == {("nbgrader", n) for n in ("alice", "bob", "zed", "mallory")}
    assert all(not s.problems for s in subs if s.status == "graded")
    hers = [s for s in subs if s.source.startswith(f"submitted/mallory/{A}/") and s.status != "graded"]
    assert len(hers) == 5 and all(s.status == "not read" and s.platform_id == "mallory" for s in hers)
    assert all(s.student.startswith("mallory_") for s in hers)
    bob = next(s for s in hers if s.source == f"submitted/mallory/{A}/bob/{A}/{A}.ipynb")
    assert bob.problems == [f"not read: a notebook in a subfolder (bob/{A}/) of the submission; nbgrader grades "
                            f"only the notebooks directly in {A}/"]
    assert len(subs) == 9  # another assignment's folder is not this one's, whatever it holds


@pytest.mark.parametrize("how", ["folder", "zip"])
def test_nbgraders_course_folder_reads_its_submitted_folder_only(tmp_path, how):
    """{course}/{step}/{student}/{assignment}/: the source (with the solutions), the release and the graded copies
    are nbgrader's own, never students named "source", "release" or a second alice."""
    files = {f"source/{A}/{A}.ipynb": b"solutions", f"release/{A}/{A}.ipynb": NB,
             f"autograded/alice/{A}/{A}.ipynb": NB, f"feedback/alice/{A}/{A}.html": b"<p>",
             f"submitted/alice/{A}/{A}.ipynb": NB, f"submitted/bob/{A}/{A}.ipynb": NB, "gradebook.db": b""}
    subs = collect.gather(source(tmp_path, files, how), A)
    assert sorted((s.student, s.source, s.status) for s in subs) == [
        ("alice", f"submitted/alice/{A}/{A}.ipynb", "graded"), ("bob", f"submitted/bob/{A}/{A}.ipynb", "graded")]


@pytest.mark.parametrize("how", ["folder", "zip"])
def test_a_moodle_folder_is_its_students_whatever_lies_below(tmp_path, how):
    files = {f"Ann Lee_5_assignsubmission_file/{A}.ipynb": NB,
             f"Ann Lee_5_assignsubmission_file/submitted/bob/{A}/{A}.ipynb": NB,
             f"Ann Lee_5_assignsubmission_file/Bo Li_6_assignsubmission_file/{A}.ipynb": NB,
             f"Ann Lee_5_assignsubmission_file/bo_6_7_{A}.ipynb": NB,
             f"Bo Li_6_assignsubmission_file/{A}.ipynb": NB}
    subs = collect.gather(source(tmp_path, files, how), A)
    assert {s.platform_id for s in subs} == {"5", "6"}
    bo = [s for s in subs if s.platform_id == "6"]
    assert [(s.source, s.status) for s in bo] == [(f"Bo Li_6_assignsubmission_file/{A}.ipynb", "graded")]


def _count_listing(monkeypatch):
    """How many entries the walk takes from os.scandir, in all."""
    seen = {"n": 0}
    real = os.scandir

    class Counted:
        def __init__(self, path):
            self.it = real(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.it.close()

        def __iter__(self):
            for item in self.it:
                seen["n"] += 1
                yield item

    monkeypatch.setattr(collect.intake.os, "scandir", Counted)
    return seen


def test_one_student_past_the_cap_is_their_own_row_and_is_listed_no_further(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_FOLDER_ENTRIES", 200)  # the class's cap, as the old walk applied it to all
    many = 3 * limits.MAX_SUBMISSION_ENTRIES
    make(tmp_path, {f"submitted/{s}/{A}/{A}.ipynb": NB for s in ("alice", "bob", "mallory")})
    for i in range(many):  # before: "expected a folder of at most ... files", and nobody was graded
        (tmp_path / "submitted" / "mallory" / A / f"e{i}").touch()
    seen = _count_listing(monkeypatch)
    subs = {s.student: s for s in collect.gather(tmp_path, A)}
    assert sorted(subs) == ["alice", "bob", "mallory"]
    assert [subs[s].status for s in ("alice", "bob")] == ["graded", "graded"]
    cap = f"more than {limits.MAX_SUBMISSION_ENTRIES} files and folders in one submission (the cap per student)"
    assert (subs["mallory"].status, subs["mallory"].problems) == ("not read", [f"{cap}: not read"])
    assert seen["n"] <= limits.MAX_SUBMISSION_ENTRIES + 20, seen["n"]  # her folder was not listed past the cap


def test_one_students_files_in_a_folder_of_the_whole_class_count_against_theirs_only(tmp_path, monkeypatch):
    """An unpacked Canvas download: Mallory's uploads lie beside everyone's files, and the folder is read to its end."""
    monkeypatch.setattr(limits, "MAX_FOLDER_ENTRIES", 100)
    for i in range(2 * limits.MAX_SUBMISSION_ENTRIES):
        (tmp_path / f"mallory_99_{5000 + i}_x{i}.txt").touch()
    make(tmp_path, {f"student{uid}_{uid}_{1000 + uid}_{A}.ipynb": NB for uid in range(1, 31)})
    subs = collect.gather(tmp_path, A)
    assert sorted(s.platform_id for s in subs if s.status == "graded") == sorted(str(uid) for uid in range(1, 31))
    assert [s.status for s in subs if s.platform_id == "99"] == ["not read"]


def test_one_canvas_student_with_thousands_of_uploads_does_not_stop_the_class(tmp_path):
    """The issue's zip: 10,000 one-byte uploads of one student beside an honest class (the old cap refused it)."""
    with zipfile.ZipFile(tmp_path / "class.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for uid in range(1, 31):
            z.writestr(f"student{uid}_{uid}_{1000 + uid}_{A}.ipynb", NB)
        for i in range(10_000):
            z.writestr(f"mallory_99_{5000 + i}_x{i}.txt", b"x")
    subs = collect.gather(tmp_path / "class.zip", A)
    graded = [s for s in subs if s.status == "graded"]
    assert sorted(s.platform_id for s in graded) == sorted(str(uid) for uid in range(1, 31))
    mallory = [s for s in subs if s.platform_id == "99"]
    assert len(mallory) == 1 and mallory[0].status == "not read" and "the cap per student" in mallory[0].problems[0]
    assert len(subs) == 31


@pytest.mark.parametrize("order", list(itertools.permutations(["bob!", "bob", "bob_2"])))
def test_a_reduced_name_never_takes_another_files_own_name_in_any_order(tmp_path, order):
    for stem in order:  # creation order; the old rule gave bob! the id bob and pushed bob to bob_2, bob_2 to bob_2_2
        (tmp_path / f"{stem}.ipynb").write_bytes(NB)
    subs = rows_by_file(collect.gather(tmp_path, A))
    ids = {f: s.student for f, s in subs.items()}
    assert ids == {"bob.ipynb": "bob", "bob_2.ipynb": "bob_2", "bob!.ipynb": "bob_3"}
    assert "named bob_3: its file name bob!.ipynb is not a plain name and collides with bob.ipynb" in \
        subs["bob!.ipynb"].problems
    assert not any(p.startswith("named") for f in ("bob.ipynb", "bob_2.ipynb") for p in subs[f].problems)
    assert all(s.status == "graded" for s in subs.values())
    flag = "2 files for bob (bob!.ipynb, bob.ipynb); each graded separately, decide which counts"
    assert flag in subs["bob.ipynb"].problems and flag in subs["bob!.ipynb"].problems


@pytest.mark.parametrize(("name", "reduced"), [
    ("Søreide Eyvind_160898", "Soreide_Eyvind_160898"), ("Bjørn Þórsson_7", "Bjorn_Thorsson_7"),
    ("Straße_8", "Strasse_8"), ("Şahin_9", "Sahin_9"), ("张伟_10", "ZhangWei_10"), ("Łukasz_11", "Lukasz_11")])
def test_an_id_keeps_every_letter_of_a_name_transliterated(name, reduced):
    """Letters outside ASCII were dropped (sreideyvind, Bjorn_orsson): ids the instructor types must read as names."""
    from grader.collecting.student_ids import reduce_name

    assert reduce_name(name) == reduced


def test_an_accented_file_name_is_reduced_and_says_so(tmp_path):
    make(tmp_path, {f"Zoë O'Brien_{A}.ipynb": NB, "carl.ipynb": NB})
    subs = rows_by_file(collect.gather(tmp_path, A))
    assert subs[f"Zoë O'Brien_{A}.ipynb"].student == "Zoe_O_Brien"
    assert subs[f"Zoë O'Brien_{A}.ipynb"].problems == \
        [f"named Zoe_O_Brien: its file name Zoë O'Brien_{A}.ipynb is not a plain name"]
    assert (subs["carl.ipynb"].student, subs["carl.ipynb"].problems) == ("carl", [])


def test_a_symlink_is_a_row_of_its_own_and_never_followed(tmp_path):
    (tmp_path / "bob_2.ipynb").write_bytes(NB)
    (tmp_path / "mallory.ipynb").symlink_to("bob_2.ipynb")
    subs = rows_by_file(collect.gather(tmp_path, A))
    mallory, bob = subs["mallory.ipynb"], subs["bob_2.ipynb"]
    assert (mallory.student, mallory.status, mallory.problems) == ("mallory", "not read", ["a symbolic link: not read"])
    assert (bob.student, bob.status, bob.problems) == ("bob_2", "graded", [])
    with pytest.raises(collect.Unreadable):
        mallory.read()


def test_a_named_pipe_is_listed_and_never_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe.ipynb")
    (tmp_path / "carol.ipynb").write_bytes(NB)
    subs = rows_by_file(in_time(lambda: collect.gather(tmp_path, A)))
    assert subs["pipe.ipynb"].status == "not read" and subs["pipe.ipynb"].problems == ["a named pipe: not read"]
    assert in_time(subs["carol.ipynb"].read) == NB
    (tmp_path / "carol.ipynb").unlink()
    os.mkfifo(tmp_path / "carol.ipynb")  # swapped in after gathering: refused at once, not opened for a writer
    with pytest.raises(collect.Unreadable):
        in_time(subs["carol.ipynb"].read)


def test_a_folder_named_like_a_notebook_is_a_row_that_says_so(tmp_path):
    (tmp_path / "dave.ipynb").mkdir()
    (tmp_path / "erin.ipynb").write_bytes(NB)
    subs = rows_by_file(collect.gather(tmp_path, A))
    assert subs["dave.ipynb"].problems == ["a folder named *.ipynb: not read"]
    assert subs["erin.ipynb"].status == "graded"


def _hostile_zip(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("ok.ipynb", NB)
        z.writestr("../evil.ipynb", NB)
        z.writestr("/abs.ipynb", NB)
        z.writestr("..\\win.ipynb", NB)
        link = zipfile.ZipInfo("link.ipynb")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, "/etc/passwd")
        z.writestr("secret.ipynb", NB)
        z.getinfo("secret.ipynb").flag_bits |= 0x1  # written to the central directory: an encrypted member
    return path


def test_a_zip_member_that_could_escape_or_hide_is_its_own_row_and_nothing_is_extracted(tmp_path):
    (tmp_path / "in").mkdir()
    archive = _hostile_zip(tmp_path / "in" / "class.zip")
    before = sorted(p for p in tmp_path.rglob("*"))
    subs = rows_by_file(collect.gather(archive, A))
    assert sorted(p for p in tmp_path.rglob("*")) == before and not (tmp_path / "evil.ipynb").exists()
    assert (subs["ok.ipynb"].status, subs["ok.ipynb"].read()) == ("graded", NB)
    escaping = "a zip member whose path leaves the archive (absolute, or with ..): not read"
    for name in ("../evil.ipynb", "/abs.ipynb", "..\\win.ipynb"):
        assert (subs[name].status, subs[name].problems) == ("not read", [escaping]), name
    assert subs["link.ipynb"].problems == ["a symbolic link in the zip: not read"]
    assert subs["secret.ipynb"].problems == ["an encrypted zip member: not read"]
    assert all(s.reader is None for n, s in subs.items() if n != "ok.ipynb")
    assert len({s.student for s in subs.values()}) == len(subs)


def _bomb(path, declared=None):
    """A zip of one member of 100 MiB of zeros (about 100 KiB deflated), written in chunks."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("bomb.ipynb", "w", force_zip64=True) as member:
            for _ in range(100):
                member.write(bytes(2**20))
        if declared is not None:
            z.getinfo("bomb.ipynb").file_size = declared  # a header that lies about the size
    return path


def test_a_zip_bomb_is_refused_from_its_listing_without_inflating_it(tmp_path):
    archive = _bomb(tmp_path / "bomb.zip")
    tracemalloc.start()
    started = time.perf_counter()
    subs = collect.gather(archive, A)
    took, (_, peak) = time.perf_counter() - started, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [(s.status, s.problems) for s in subs] == [("not read", ["a zip member of more than 16 MiB: not read"])]
    assert took < 5 and peak < 8 * 2**20, (took, peak)


def test_a_zip_bomb_that_lies_about_its_size_inflates_no_more_than_the_caps(tmp_path, monkeypatch):
    archive = _bomb(tmp_path / "liar.zip", declared=12 * 2**20)  # under the size cap, 120:1 by its own account
    sub = collect.gather(archive, A)[0]
    assert sub.status == "graded"
    tracemalloc.start()
    with pytest.raises(collect.Unreadable):
        sub.read()  # zipfile stops at the declared 12 MiB; the CRC then fails
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2 * limits.MAX_FILE_BYTES, peak
    monkeypatch.setattr(limits, "MAX_ZIP_RATIO", 20)  # the ratio is checked on what is inflated, as it is inflated
    with pytest.raises(collect.Unreadable, match="compressed more than 20:1"):
        sub.read()


def test_a_zip_of_too_many_members_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_ZIP_MEMBERS", 300)  # the real cap (200,000) takes seconds to write
    with zipfile.ZipFile(tmp_path / "many.zip", "w") as z:
        for i in range(limits.MAX_ZIP_MEMBERS + 1):
            z.writestr(f"s{i}.ipynb", b"")
    refused = r"^SUBMISSIONS: expected a \.zip of at most 300 members, got 301"
    with pytest.raises(collect.SourceError, match=refused):
        collect.gather(tmp_path / "many.zip", A)


@pytest.mark.parametrize("data", [b"not a zip at all", b"PK\x03\x04" + bytes(100), b"PK\x05\x06" + bytes(18)[:10]])
def test_a_corrupt_zip_is_an_error_naming_the_argument(tmp_path, data):
    (tmp_path / "broken.zip").write_bytes(data)
    with pytest.raises(collect.SourceError, match=r"^SUBMISSIONS: expected a folder or a valid \.zip file, got .*"):
        collect.gather(tmp_path / "broken.zip", A)


def test_a_truncated_zip_is_an_error_too(tmp_path):
    whole = zipped(tmp_path / "whole.zip", {"a.ipynb": NB, "b.ipynb": NB}).read_bytes()
    (tmp_path / "cut.zip").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(collect.SourceError, match="SUBMISSIONS"):
        collect.gather(tmp_path / "cut.zip", A)
    with pytest.raises(collect.SourceError, match="expected a folder or a .zip file of submissions, got"):
        collect.gather(tmp_path / "missing", A)


@pytest.mark.parametrize("how", ["folder", "zip"])
def test_every_file_a_student_uploaded_has_its_row(tmp_path, how):
    """A .py beside a Canvas notebook, a .png in a Moodle folder, a plain folder's .py: dropped in silence before."""
    files = {f"doejane_7_90_{A}.ipynb": NB, "doejane_7_91_helpers.py": b"x = 1",
             f"Ann Lee_5_assignsubmission_file/{A}.ipynb": NB, "Ann Lee_5_assignsubmission_file/plot.png": b"png",
             "bob.py": b"print(1)", ".DS_Store": b""}
    subs = rows_by_file(collect.gather(source(tmp_path, files, how), A))
    assert {f: (s.status, s.problems) for f, s in subs.items() if s.status != "graded"} == {
        "doejane_7_91_helpers.py": ("not read", ["not a notebook: not read"]),
        "Ann Lee_5_assignsubmission_file/plot.png": ("not read", ["not a notebook: not read"]),
        "bob.py": ("not read", ["not a notebook: not read"])}
    assert subs["doejane_7_91_helpers.py"].platform_id == "7" and subs["bob.py"].student == "bob"
    assert sorted(f for f, s in subs.items() if s.status == "graded") == \
        [f"Ann Lee_5_assignsubmission_file/{A}.ipynb", f"doejane_7_90_{A}.ipynb"]


def test_a_mixed_folder_is_read_file_by_file(tmp_path):
    """A Canvas download with a notebook e-mailed late dropped beside it: each file by its own layout."""
    make(tmp_path, {f"doejane_7_90_{A}.ipynb": NB, "latecomer.ipynb": NB, "notes/draft.ipynb": NB})
    subs = rows_by_file(collect.gather(tmp_path, A))
    assert {f: (s.platform, s.student) for f, s in subs.items()} == \
        {f"doejane_7_90_{A}.ipynb": ("canvas", "doejane_7"), "latecomer.ipynb": ("folder", "latecomer")}
