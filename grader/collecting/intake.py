"""What a SUBMISSIONS folder or ``.zip`` holds, listed and read as hostile input (for ``grader/collecting/collect.py``).

:func:`entries` lists every file and folder: a folder walked without following a link (a link, a pipe, a socket, a
device is an entry saying what it is), a zip from its listing alone, nothing extracted to disk. A member whose path
is absolute or has ``..`` (backslashes read as slashes), a link, an encrypted member, one over a cap, is an entry
saying what it is, never read. Reading an entry (:class:`Entry`'s ``reader``) opens a file with ``O_NOFOLLOW`` and
``O_NONBLOCK`` at every part of its path and checks with ``fstat`` that it is still a regular file, or inflates a
member in memory under the caps below, whatever its header declares.

Each entry knows its **owner**, the student's place it lies in (``grader/collecting/platforms.py``: a Moodle submission
folder or nbgrader's student folder, decided from the top down, so nothing inside a place makes another). One student's
entries, a place's or the files named by one platform identity, are listed up to ``MAX_SUBMISSION_ENTRIES``: past
it that student's entries are dropped for one entry saying so (their "not read" row), and a folder of theirs is
listed no further, so what one student adds costs the listing no more than the cap. A folder or zip that cannot be
listed, or whose own entries (outside every student's) are over their cap, is a :class:`SourceError`, raised
before anything is graded.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from grader import limits
from grader.collecting import platforms
from grader.kernel_side import plain

SKIPPED = {".ipynb_checkpoints", "__MACOSX"}  # Jupyter's autosaves; macOS's resource forks in a zip
KINDS = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "a symbolic link"),
         (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
         (stat.S_ISBLK, "a device"))
OVER = f"more than {limits.MAX_SUBMISSION_ENTRIES} files and folders in one submission (the cap per student)"


class SourceError(ValueError):
    """SUBMISSIONS cannot be read at all: raised before anything is graded."""


class Unreadable(Exception):
    """A submission's bytes cannot be read safely; the message says why, in the grader's own words."""


@dataclass(frozen=True)
class Entry:
    parts: tuple[str, ...]        # its path, without empty, "." and ".." parts
    source: str                   # its path as written ("/"-separated in a folder)
    kind: str                     # "file", "dir", or what it is instead ("a symbolic link", ...)
    reader: Callable[[], bytes] | None = None
    always: bool = False          # listed whatever its name (an unsafe zip member, a student over the cap)
    owner: tuple[str, ...] | None = None  # the student's place it lies in (the place's own entry: itself)


def entries(source: Path, assignment: str) -> list[Entry]:
    """Every file and folder in ``source`` (a folder or a zip), except Jupyter's checkpoints and macOS's forks, each
    with its owner; one student's past the cap replaced by one entry saying so."""
    source = Path(source)
    if source.is_dir():
        found = _folder_entries(source, assignment)
    elif source.is_file():
        found = _zip_entries(source, assignment)
    else:
        raise SourceError(f"SUBMISSIONS: expected a folder or a .zip file of submissions, got {str(source)!r}")
    return [e for e in found if not SKIPPED & set(e.parts)]


def _student(entry: Entry) -> tuple | None:
    """Whose entry this is, for the cap: its place, or the platform identity its file name states; None: nobody's."""
    if entry.owner is not None:
        return entry.owner
    return platforms.file_owner(entry.parts[-1]) if entry.kind == "file" else None


class _Tally:
    """Entries kept per student (:func:`_student`), and outside every student's."""

    def __init__(self, where: str):
        self.where, self.kept, self.unowned, self.folders = where, {}, 0, 0
        self.over: dict[tuple, Entry] = {}  # student -> the one entry that stands for all of theirs

    def count_folder(self) -> None:
        """A folder outside every place, as it is first read: bounded like the instructor's other entries."""
        self.folders += 1
        if self.folders > limits.MAX_FOLDER_ENTRIES:
            raise SourceError(f"SUBMISSIONS: expected at most {limits.MAX_FOLDER_ENTRIES} folders outside the "
                              f"students' submissions, got more in {self.where}")

    def keep(self, entry: Entry) -> bool:
        """Whether ``entry`` is kept: False once its student is past the cap (one entry says so instead)."""
        key = _student(entry)
        if key is None:
            self.unowned += 1
            if self.unowned > limits.MAX_FOLDER_ENTRIES:
                raise SourceError(f"SUBMISSIONS: expected at most {limits.MAX_FOLDER_ENTRIES} files and folders "
                                  f"outside the students' submissions, got more in {self.where}")
            return True
        if key in self.over:
            return False
        self.kept[key] = self.kept.get(key, 0) + 1
        if self.kept[key] > limits.MAX_SUBMISSION_ENTRIES:
            at = entry.owner or entry.parts  # a place stands for itself; a file for its platform identity
            self.over[key] = Entry(at, "/".join(at), OVER, always=True, owner=entry.owner)
            return False
        return True

    def result(self, found: list[Entry]) -> list[Entry]:
        return [e for e in found if _student(e) not in self.over] + list(self.over.values())


def _folder_entries(root: Path, assignment: str) -> list[Entry]:
    """Every file and folder below ``root``, walked without following a link (a link is an entry of its own). A
    folder inside no place becomes one by its name or by the folders it holds (read first); a place's folders are
    listed only while their student is under the cap, and one student's files past it are never kept."""
    tally, found, stack = _Tally(repr(str(root))), [], [((), None)]
    while stack:
        rel, owner = stack.pop()
        if owner is None and rel and platforms.MOODLE_FOLDER.match(rel[-1]):
            owner = rel  # a place by its name alone
        if owner in tally.over:
            continue
        try:
            folders = set() if owner else {parts[-1] for parts, kind in _listing(root, rel, tally) if kind == "dir"}
            if owner is None and rel and platforms.is_place(rel[-1], folders, assignment):
                owner = rel  # nbgrader's student folder: it holds <assignment>/
            for parts, kind in _listing(root, rel):
                entry = Entry(parts, "/".join(parts), kind, partial(_read_file, root, "/".join(parts))
                              if kind == "file" else None, owner=owner)
                if not tally.keep(entry):
                    if owner:
                        break  # this student is past the cap: their folders are listed no further
                    continue
                found.append(entry)
                step = owner is None and platforms.course_step(parts[-1], folders)
                if kind == "dir" and parts[-1] not in SKIPPED and not step:
                    stack.append((parts, owner))
        except OSError as exc:
            if not rel:
                raise SourceError(f"SUBMISSIONS: expected a readable folder, got {str(root)!r} "
                                  f"({exc.strerror})") from None
            found.append(Entry(rel, "/".join(rel), "a folder that cannot be listed", owner=owner))
    return tally.result(found)


def _listing(root: Path, rel: tuple[str, ...], tally: _Tally | None = None):
    """(parts, kind) of each entry of the folder ``rel``, one at a time, links not followed. With ``tally``: its
    folders only, each counted as the instructor's (a folder outside every place is read twice, this first)."""
    with os.scandir(os.path.join(root, *rel)) as listing:
        for item in listing:
            if tally is not None and not item.is_dir(follow_symlinks=False):
                continue
            try:
                mode = item.stat(follow_symlinks=False).st_mode
            except OSError:
                continue  # gone since it was listed
            kind = next((what for test, what in KINDS if test(mode)), "not a regular file")
            if tally is not None:
                tally.count_folder()
            yield (*rel, item.name), kind


def _read_file(root: Path, rel: str) -> bytes:
    """``root/rel``, opened with O_NOFOLLOW | O_NONBLOCK at every part and fstat-checked to be a regular file."""
    try:
        with plain.open_under(root, rel, limit=sys.maxsize) as f:
            return f.read(limits.MAX_FILE_BYTES + 1)
    except (OSError, ValueError):
        raise Unreadable("it is not a regular file any more (a link, a pipe or a folder took its place), or cannot "
                         "be opened") from None


def _zip_entries(path: Path, assignment: str) -> list[Entry]:
    """Every member of the zip ``path``, to be read in memory; SourceError for a file that is not a valid zip."""
    try:
        archive = _Archive(path)
        infos = archive.zip.infolist()
    except Exception as exc:  # noqa: BLE001 - BadZipFile, OSError, struct.error, ...: the argument is wrong
        raise SourceError(f"SUBMISSIONS: expected a folder or a valid .zip file, got {str(path)!r}, which is not "
                          f"a valid zip ({type(exc).__name__})") from None
    if len(infos) > limits.MAX_ZIP_MEMBERS:
        raise SourceError(f"SUBMISSIONS: expected a .zip of at most {limits.MAX_ZIP_MEMBERS} members, got "
                          f"{len(infos)} in {str(path)!r}")
    members = [_member(archive, info) for info in infos]
    places = _zip_places(members, assignment)
    tally, found = _Tally(repr(str(path))), []
    for e in members:
        owner = next((e.parts[:i] for i in range(1, len(e.parts)) if e.parts[:i] in places), None)
        entry = replace(e, owner=owner)
        if tally.keep(entry):
            found.append(entry)
    return tally.result(found)


def _zip_places(members: list[Entry], assignment: str) -> set[tuple[str, ...]]:
    """The folders of a zip that are places (``platforms.is_place``), read from the top down: a folder inside a
    place is never one."""
    holds: dict[tuple, set[str]] = {}  # folder -> the names of the folders it holds
    for e in members:
        for i in range(1, len(e.parts) + (e.kind == "dir")):
            holds.setdefault(e.parts[:i], set())
            holds.setdefault(e.parts[:i - 1], set()).add(e.parts[i - 1])
    places: set[tuple[str, ...]] = set()
    steps: set[tuple[str, ...]] = set()  # nbgrader's own steps in a course folder: nothing there is a place
    for folder in sorted(holds, key=len)[1:]:  # the top, (), is nobody's place
        if any(folder[:i] in places or folder[:i] in steps for i in range(1, len(folder))):
            continue
        if platforms.course_step(folder[-1], holds[folder[:-1]]):
            steps.add(folder)
        elif platforms.is_place(folder[-1], holds[folder], assignment):
            places.add(folder)
    return places


def _member(archive: _Archive, info: zipfile.ZipInfo) -> Entry:
    """A zip member as an entry: what it is, from its listing alone (nothing is inflated here)."""
    name = info.filename if info.flag_bits & 0x800 else _utf8(info.filename)
    raw = name.replace("\\", "/").split("/")
    parts = tuple(p for p in raw if p not in ("", ".", "..")) or ("(no name)",)
    mode = info.external_attr >> 16
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name) or ".." in raw:
        return Entry(parts, name, "a zip member whose path leaves the archive (absolute, or with ..)", always=True)
    if stat.S_ISLNK(mode):
        return Entry(parts, name, "a symbolic link in the zip", always=True)
    if info.flag_bits & 0x1:
        return Entry(parts, name, "an encrypted zip member", always=True)
    if info.is_dir():
        return Entry(parts, name, "dir")
    if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
        return Entry(parts, name, "a zip member that is not a regular file", always=True)
    if info.file_size > limits.MAX_FILE_BYTES:
        return Entry(parts, name, f"a zip member of more than {limits.MAX_FILE_BYTES // 2**20} MiB")
    if info.file_size > limits.ZIP_RATIO_FROM and info.file_size > limits.MAX_ZIP_RATIO * info.compress_size:
        return Entry(parts, name, f"a zip member compressed more than {limits.MAX_ZIP_RATIO}:1", always=True)
    return Entry(parts, name, "file", partial(archive.read, info))


def _utf8(name: str) -> str:
    """A member name without the zip's UTF-8 flag, which zipfile read as cp437: UTF-8 after all, when it decodes."""
    try:
        return name.encode("cp437").decode("utf-8")
    except UnicodeError:
        return name


class _Archive:
    """An open zip whose members are inflated in memory: each within ``MAX_FILE_BYTES + 1`` bytes and ``MAX_ZIP_RATIO``
    (whatever its header declares), all of them within ``MAX_ZIP_BYTES`` (``grader.limits``)."""

    def __init__(self, path: Path):
        self.zip = zipfile.ZipFile(path)
        self.left = limits.MAX_ZIP_BYTES

    def read(self, info: zipfile.ZipInfo) -> bytes:
        chunks, size = [], 0
        try:
            with self.zip.open(info) as member:
                cap = limits.MAX_FILE_BYTES
                while size <= cap and (chunk := member.read(min(limits.ZIP_CHUNK_BYTES, cap + 1 - size))):
                    size, self.left = size + len(chunk), self.left - len(chunk)
                    if self.left < 0:
                        raise Unreadable(f"the zip's {limits.MAX_ZIP_BYTES // 2**20} MiB of inflated bytes are spent")
                    if size > limits.ZIP_RATIO_FROM and size > limits.MAX_ZIP_RATIO * info.compress_size:
                        raise Unreadable(f"the zip member is compressed more than {limits.MAX_ZIP_RATIO}:1")
                    chunks.append(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError) as exc:
            raise Unreadable(f"the zip member is damaged ({type(exc).__name__})") from None
        return b"".join(chunks)
