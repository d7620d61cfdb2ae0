"""Files below a root directory, reached without ever following a link or leaving the root.

A workspace is written by the model (through bash in its jail), so the daemon must treat
every name in it as hostile: a symlink planted there (``MEMORY.md -> /proc/self/environ``),
a directory swapped for a symlink between a check and an open, a FIFO that blocks any
``open()``, a sparse file of a gigabyte. `Beneath` opens its root once, with
``O_DIRECTORY|O_NOFOLLOW``, and reaches every path below it one component at a time
relative to the previous directory's fd (``openat``): each directory with
``O_NOFOLLOW|O_DIRECTORY``, the last name with ``O_NOFOLLOW|O_NONBLOCK``. Nothing is
ever opened again by name from the root, so there is no window in which a swapped
component could be followed. ``..`` and absolute paths are refused outright.

The final file must be a regular file with exactly one name (checked with ``fstat`` on
the opened fd, so it is the file that will be read or appended to): a hard link made in
the workspace to a file outside it (``ln ~/.beamclaw/sessions.db notes``) has two names
and is refused, where no check on the path could tell it from a file of its own. Reads
stop at a cap the caller gives, text is decoded with ``errors="replace"``, writes go to
a new file in the same directory fd and are renamed over the target (so a hard link
there keeps its old content), and unlinking removes a symlink itself, never what it
points to.

Every method blocks (it is plain file I/O): call it from a worker thread
(``trio.to_thread.run_sync``), never on the event loop.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import stat
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, final

import attrs

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS: Final = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CHUNK: Final = 1 << 16

EntryKind = Literal["file", "directory", "link", "other"]
RefusalReason = Literal["link", "hard_link", "special", "directory", "not_a_directory", "outside", "invalid"]


class PathRefused(OSError):
    """A path BeamClaw will not use: a link, a special file, ``..``, a directory where a file belongs.

    ``reason`` names the refusal (``"link"``, ``"hard_link"``, ``"special"``, ``"directory"``,
    ``"not_a_directory"``, ``"outside"``, ``"invalid"``) so callers can act on it; the
    message says it in words and names the path as the caller gave it.
    """

    def __init__(self, path: str, reason: RefusalReason, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return str(self.args[0])


@final
@attrs.frozen
class Excerpt:
    """What was read of a file: all of it, or its first and last bytes when it was over the cap."""

    head: str
    tail: str
    size: int
    truncated: bool

    @property
    def text(self) -> str:
        return self.head + self.tail


def split_path(path: str) -> tuple[str, ...]:
    """The components of a relative *path* (``""`` and ``.`` dropped); `PathRefused` for ``..`` or ``/x``."""
    if "\x00" in path:
        raise PathRefused(path, "invalid", f"{path!r} contains a NUL character")
    if path.startswith("/"):
        raise PathRefused(path, "outside", f"{path!r} is an absolute path; only paths below the folder are used")
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts:
        raise PathRefused(path, "outside", f"{path!r} contains '..'; only paths below the folder are used")
    return parts


def _kind(mode: int) -> EntryKind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def _link_refusal(shown: str) -> PathRefused:
    return PathRefused(shown, "link", f"{shown} is a symbolic link; BeamClaw does not follow links in a workspace")


def _special_refusal(shown: str) -> PathRefused:
    return PathRefused(shown, "special", f"{shown} is not a regular file (a FIFO, socket or device); BeamClaw skips it")


def _hard_link_refusal(shown: str, links: int) -> PathRefused:
    what = f"has {links} names (hard links)" if links != 1 else "was replaced while BeamClaw opened it"
    return PathRefused(shown, "hard_link", f"{shown} {what}; BeamClaw only uses a file that has one name")


def _classify(dir_fd: int, name: str, shown: str, exc: OSError) -> OSError:
    """Turn an ``openat`` failure on *name* into the refusal it stands for (or *exc* itself)."""
    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EISDIR, errno.EMLINK):
        return exc
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return exc
    match _kind(mode):
        case "link":
            return _link_refusal(shown)
        case "directory":
            return PathRefused(shown, "directory", f"{shown} is a directory")
        case "file":
            return PathRefused(shown, "not_a_directory", f"{shown} is a file, not a directory")
    return _special_refusal(shown)


def _name_gone(fd: int, dir_fd: int, name: str, st: os.stat_result) -> bool:
    """Whether the name *fd* was opened by has been removed since (``st`` is its fstat, taken before).

    ``st_nlink == 1`` alone proves nothing about a file that had two names: open
    ``notes`` (a hard link to a file outside), then the other side removes ``notes``
    and the count drops to 1, the outside name. So after the count, the name the fd was
    opened by must still be there. The kernel knows it: a removed name reads
    ``"... (deleted)"`` in /proc/self/fd, and a removed name never comes back (a new
    link is a new name). Still there now means it was there when the count was taken,
    so the file's one name then was this one. Without /proc, the name must still give
    the same file, which narrows the race without closing it.
    """
    try:
        return os.readlink(f"/proc/self/fd/{fd}").endswith(" (deleted)")
    except OSError:
        try:
            now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return True
        return (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino)


def _read_upto(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@final
class Beneath:
    """A root directory, opened once; every path below it is reached without following a link.

    Use it as a context manager (the root's fd is closed on exit). *root* itself is
    opened with ``O_NOFOLLOW`` on its last component unless ``follow_root=True`` (for a
    folder only the operator controls, such as the bundled skills); the folders above
    it are the operator's and are followed as usual.

    Raises:
        FileNotFoundError: *root* does not exist.
        PathRefused: *root* is a symbolic link or not a directory.
    """

    def __init__(self, root: str | os.PathLike[str], *, follow_root: bool = False) -> None:
        self.root = Path(root)
        flags = _DIR_FLAGS & ~os.O_NOFOLLOW if follow_root else _DIR_FLAGS
        try:
            self._fd: int | None = os.open(self.root, flags)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            if self.root.is_symlink():
                raise _link_refusal(str(self.root)) from None
            raise PathRefused(str(self.root), "not_a_directory", f"{self.root} is not a directory") from None

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def fd(self) -> int:
        if self._fd is None:
            raise ValueError("this Beneath is closed")
        return self._fd

    # -- walking ------------------------------------------------------------------------

    def _directory(self, parts: tuple[str, ...], *, create: bool = False) -> int:
        """A new fd on the directory *parts* name (the caller closes it)."""
        fd = os.dup(self.fd)
        try:
            for i, name in enumerate(parts):
                shown = "/".join(parts[: i + 1])
                try:
                    next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    # Made meanwhile (or a link put there): the open below decides.
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o700, dir_fd=fd)
                    try:
                        next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as exc:
                        raise _classify(fd, name, shown, exc) from None
                except OSError as exc:
                    raise _classify(fd, name, shown, exc) from None
                os.close(fd)
                fd = next_fd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _parent(self, path: str, *, create: bool = False) -> tuple[int, str]:
        """(fd of the folder that holds *path*, its last name); `PathRefused` for the root itself."""
        parts = split_path(path)
        if not parts:
            raise PathRefused(path, "directory", "the folder itself is not a file")
        return self._directory(parts[:-1], create=create), parts[-1]

    def _open_file(self, path: str, flags: int, mode: int = 0o600, *, create_parents: bool = False) -> int:
        """An fd on the regular file *path* with one name, opened without following a link or blocking."""
        parent, name = self._parent(path, create=create_parents)
        try:
            try:
                fd = os.open(name, flags | _FILE_FLAGS, mode, dir_fd=parent)
            except OSError as exc:
                raise _classify(parent, name, path, exc) from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or _name_gone(fd, parent, name, st):
                os.close(fd)
                if stat.S_ISDIR(st.st_mode):
                    raise PathRefused(path, "directory", f"{path} is a directory")
                if stat.S_ISREG(st.st_mode):
                    raise _hard_link_refusal(path, st.st_nlink)
                raise _special_refusal(path)
            return fd
        finally:
            os.close(parent)

    # -- reading ------------------------------------------------------------------------

    def lstat(self, path: str) -> os.stat_result | None:
        """*path*'s own status (a link is not followed), or None when it does not exist."""
        parts = split_path(path)
        if not parts:
            return os.fstat(self.fd)
        try:
            parent = self._directory(parts[:-1])
        except (FileNotFoundError, PathRefused):
            return None
        try:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        finally:
            os.close(parent)

    def kind(self, path: str) -> EntryKind | None:
        """What *path* is (``"file"``, ``"directory"``, ``"link"``, ``"other"``), or None."""
        st = self.lstat(path)
        return None if st is None else _kind(st.st_mode)

    def read_bytes(self, path: str, *, limit: int, tail: int = 0) -> tuple[bytes, bytes, int]:
        """(head, tail, size) of the regular file *path*, at most *limit* bytes in all.

        A file of up to *limit* bytes is read whole (the tail is empty). A longer one
        gives its first ``limit - tail`` bytes and its last *tail* bytes; nothing else of
        it is read, however large it is.

        Raises:
            FileNotFoundError: *path* (or a folder on the way) does not exist.
            PathRefused: a link, a special file or a directory is in the way, or the
                file has more than one name (a hard link).
        """
        if limit < 0 or not 0 <= tail <= limit:
            raise ValueError(f"need 0 <= tail <= limit, not tail={tail}, limit={limit}")
        fd = self._open_file(path, os.O_RDONLY)
        try:
            data = _read_upto(fd, limit + 1)
            if len(data) <= limit:
                return data, b"", len(data)
            size = max(os.fstat(fd).st_size, len(data))
            end = os.pread(fd, tail, max(size - tail, limit - tail)) if tail else b""
            return data[: limit - tail], end, size
        finally:
            os.close(fd)

    def read_text(self, path: str, *, limit: int, tail: int = 0) -> Excerpt:
        """`read_bytes`, decoded as UTF-8 (a bad byte becomes U+FFFD, never an error)."""
        head, end, size = self.read_bytes(path, limit=limit, tail=tail)
        truncated = size > len(head) + len(end)
        return Excerpt(head.decode("utf-8", "replace"), end.decode("utf-8", "replace"), size, truncated)

    def list_dir(self, path: str = "", *, limit: int | None = None) -> list[tuple[str, EntryKind]]:
        """(name, kind) of the entries of the folder *path*, sorted by name; links are not followed.

        With *limit*, at most that many entries are read (which ones is up to the file
        system): a folder of a million files costs no more than *limit* of them.
        """
        fd = self._directory(split_path(path))
        try:
            with os.scandir(fd) as entries:
                found = [
                    (e.name, _kind(e.stat(follow_symlinks=False).st_mode)) for e in itertools.islice(entries, limit)
                ]
        finally:
            os.close(fd)
        return sorted(found)

    # -- writing ------------------------------------------------------------------------

    def mkdir(self, path: str) -> None:
        """Make the folder *path* and the ones above it (mode 0700); an existing folder is fine."""
        os.close(self._directory(split_path(path), create=True))

    def create(self, path: str, data: bytes, *, mode: int = 0o600, parents: bool = False) -> bool:
        """Write *path* only if nothing (not even a link) has that name; return whether it was written."""
        try:
            fd = self._open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode, create_parents=parents)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return True

    def write(self, path: str, data: bytes, *, mode: int = 0o600, parents: bool = False) -> None:
        """Replace *path* atomically: a new file beside it, written, synced, renamed over it.

        A link at *path* is replaced by the file (its target is untouched); a directory
        there is refused.
        """
        parent, name = self._parent(path, create=parents)
        tmp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
        try:
            existing = _stat_or_none(parent, name)
            if existing is not None and stat.S_ISDIR(existing.st_mode):
                raise PathRefused(path, "directory", f"{path} is a directory")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, mode, dir_fd=parent)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except IsADirectoryError:
                raise PathRefused(path, "directory", f"{path} is a directory") from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
        finally:
            os.close(parent)

    def append(self, path: str, data: bytes, *, mode: int = 0o600, parents: bool = False) -> None:
        """Add *data* at the end of the regular file *path* (created if missing); it must have one name."""
        fd = self._open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode, create_parents=parents)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)

    def remove(self, path: str, *, missing_ok: bool = False) -> EntryKind | None:
        """Delete *path*: a file or a link (never the link's target), or an empty folder.

        Returns what was removed (None when it was missing and *missing_ok*).
        """
        try:
            parent, name = self._parent(path)
        except FileNotFoundError:
            if missing_ok:
                return None
            raise
        try:
            st = _stat_or_none(parent, name)
            if st is None:
                if missing_ok:
                    return None
                raise FileNotFoundError(errno.ENOENT, "no such file", path)
            # Between the stat and the call the entry may change; rmdir never follows a
            # link (ENOTDIR) and unlink never removes a folder (EISDIR), so that is safe.
            if stat.S_ISDIR(st.st_mode):
                os.rmdir(name, dir_fd=parent)
                return "directory"
            os.unlink(name, dir_fd=parent)
            return _kind(st.st_mode)
        finally:
            os.close(parent)


def _stat_or_none(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
