"""`Beneath`: every path below a root, reached without following a link, blocking, or reading too much."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from beamclaw_base import Beneath, PathRefused


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root" / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.txt").write_text("OUTSIDE")
    return tmp_path / "root"


@pytest.mark.parametrize("path", ["../outside/x.txt", "sub/../../outside/x.txt", "/etc/passwd", "a\x00b"])
def test_dotdot_absolute_and_nul_are_refused(root: Path, path: str) -> None:
    with Beneath(root) as b, pytest.raises(PathRefused) as refused:
        b.read_text(path, limit=100)
    assert refused.value.reason in {"outside", "invalid"}


def test_no_link_is_followed_anywhere_on_the_path(root: Path) -> None:
    (root / "file-link").symlink_to(root.parent / "outside" / "x.txt")
    (root / "dir-link").symlink_to(root.parent / "outside")
    (root / "inner-link").symlink_to("sub")  # even a link that stays inside
    with Beneath(root) as b:
        for path in ("file-link", "dir-link/x.txt", "inner-link/y"):
            with pytest.raises(PathRefused, match="is a symbolic link") as refused:
                b.read_text(path, limit=100)
            assert refused.value.reason == "link"
        with pytest.raises(PathRefused, match="dir-link is a symbolic link"):
            b.write("dir-link/new.txt", b"x", parents=True)
        with pytest.raises(PathRefused):
            b.append("file-link", b"x")
        b.write("file-link", b"mine")  # the link is replaced, its target untouched
        assert b.remove("dir-link") == "link"
    assert (root / "file-link").read_text() == "mine" and not (root / "file-link").is_symlink()
    assert (root.parent / "outside" / "x.txt").read_text() == "OUTSIDE" and (root.parent / "outside").is_dir()
    with pytest.raises(PathRefused, match="symbolic link"):
        Beneath(root / "inner-link")


def test_special_files_are_refused_without_blocking(root: Path) -> None:
    os.mkfifo(root / "fifo")
    with Beneath(root) as b:
        for action in (lambda: b.read_text("fifo", limit=10), lambda: b.append("fifo", b"x")):
            with pytest.raises(PathRefused, match="not a regular file") as refused:
                action()
            assert refused.value.reason == "special"
        with pytest.raises(PathRefused, match="is a directory"):
            b.read_text("sub", limit=10)
        assert b.list_dir() == [("fifo", "other"), ("sub", "directory")]


def test_reads_stop_at_the_cap_keeping_head_and_tail(root: Path) -> None:
    with open(root / "big", "wb") as f:
        f.write(b"HEAD")
        f.truncate(1 << 30)
        f.seek((1 << 30) - 4)
        f.write(b"TAIL")
    (root / "bad").write_bytes(b"a\xffb")
    with Beneath(root) as b:
        head, tail, size = b.read_bytes("big", limit=1000, tail=100)
        assert (len(head), len(tail), size) == (900, 100, 1 << 30)
        assert head.startswith(b"HEAD") and tail.endswith(b"TAIL")
        excerpt = b.read_text("bad", limit=10)
        assert excerpt.text == "a\ufffdb" and not excerpt.truncated
        assert b.read_text("big", limit=10).truncated


def test_writes_are_atomic_and_stay_in_the_folder(root: Path) -> None:
    with Beneath(root) as b:
        b.write("a/b/c.txt", b"one", parents=True)
        b.write("a/b/c.txt", b"two")
        b.append("a/b/c.txt", b"+")
        assert not b.create("a/b/c.txt", b"no")
        assert b.read_text("a/b/c.txt", limit=100).text == "two+"
        assert b.list_dir("a/b") == [("c.txt", "file")]  # no temporary file left behind
        assert b.remove("a/b/c.txt") == "file" and b.remove("a/b") == "directory"
        assert b.remove("missing", missing_ok=True) is None


def test_a_file_with_two_names_is_not_read_or_appended_but_may_be_replaced(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside")
    os.link(outside, root / "twin")
    with Beneath(root) as b:
        for use in (lambda: b.read_bytes("twin", limit=100), lambda: b.append("twin", b"+")):
            with pytest.raises(PathRefused) as refused:
                use()
            assert refused.value.reason == "hard_link" and "2 names" in str(refused.value)
        b.write("twin", b"mine")
        assert b.read_text("twin", limit=100).text == "mine"
    assert outside.read_text() == "outside"
