"""What a SUBMISSIONS folder or ``.zip`` holds, listed and read as hostile input (for ``grader/collect.py``).

:func:`entries` lists every file and folder: a folder walked without following a link (a link, a pipe, a socket, a
device is an entry saying what it is), a zip from its listing alone, nothing extracted to disk. A member whose path
is absolute or has ``..`` (backslashes read as slashes), a link, an encrypted member, one over a cap, is an entry
saying what it is, never read. Reading an entry (:class:`Entry`'s ``reader``) opens a file with ``O_NOFOLLOW`` and
``O_NONBLOCK`` at every part of its path and checks with ``fstat`` that it is still a regular file, or inflates a
member in memory under the caps below, whatever its header declares. A folder or zip that cannot be listed, or is
over its cap, is a :class:`SourceError`, raised before anything is graded.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from grader import limits
from grader.kernel_side import plain

SKIPPED = {".ipynb_checkpoints", "__MACOSX"}  # Jupyter's autosaves; macOS's resource forks in a zip
KINDS = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "a symbolic link"),
         (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
         (stat.S_ISBLK, "a device"))


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
    always: bool = False          # a zip member that is listed whatever its name (an unsafe path, a link, ...)


def entries(source: Path) -> list[Entry]:
    """Every file and folder in ``source`` (a folder or a zip), except Jupyter's checkpoints and macOS's forks."""
    source = Path(source)
    if source.is_dir():
        found = _folder_entries(source)
    elif source.is_file():
        found = _zip_entries(source)
    else:
        raise SourceError(f"SUBMISSIONS: expected a folder or a .zip file of submissions, got {str(source)!r}")
    return [e for e in found if not SKIPPED & set(e.parts)]


def _folder_entries(root: Path) -> list[Entry]:
    """Every file and folder below ``root``, walked without following a link (a link is an entry of its own)."""
    found, stack = [], [()]
    while stack:
        rel = stack.pop()
        try:
            listing = list(os.scandir(os.path.join(root, *rel)))
        except OSError as exc:
            if not rel:
                raise SourceError(f"SUBMISSIONS: expected a readable folder, got {str(root)!r} "
                                  f"({exc.strerror})") from None
            found.append(Entry(rel, "/".join(rel), "a folder that cannot be listed"))
            continue
        for item in listing:
            parts = (*rel, item.name)
            try:
                mode = item.stat(follow_symlinks=False).st_mode
            except OSError:
                continue  # gone since it was listed
            kind = next((what for test, what in KINDS if test(mode)), "not a regular file")
            if kind == "dir" and item.name not in SKIPPED:
                stack.append(parts)
            found.append(Entry(parts, "/".join(parts), kind, partial(_read_file, root, "/".join(parts))
                               if kind == "file" else None))
        if len(found) > limits.MAX_FOLDER_ENTRIES:
            raise SourceError(f"SUBMISSIONS: expected a folder of at most {limits.MAX_FOLDER_ENTRIES} files and "
                              f"folders, got more below {str(root)!r}")
    return found


def _read_file(root: Path, rel: str) -> bytes:
    """``root/rel``, opened with O_NOFOLLOW | O_NONBLOCK at every part and fstat-checked to be a regular file."""
    try:
        with plain.open_under(root, rel, limit=sys.maxsize) as f:
            return f.read(limits.MAX_FILE_BYTES + 1)
    except (OSError, ValueError):
        raise Unreadable("it is not a regular file any more (a link, a pipe or a folder took its place), or cannot "
                         "be opened") from None


def _zip_entries(path: Path) -> list[Entry]:
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
    return [_member(archive, info) for info in infos]


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
