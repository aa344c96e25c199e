"""Files replaced whole: one rename, the old mode kept, no link followed, no stray temporary."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mlagent_tui.core.atomic import write_atomic
from mlagent_tui.core.workspace.journal import Edit, Journal


def test_replaces_the_content_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "record.json"
    target.write_text("old")
    target.chmod(0o600)
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


def test_a_new_file_is_readable_by_others_as_a_plain_write_would_be(tmp_path: Path) -> None:
    target = write_atomic(tmp_path / "fresh.bin", b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sweep.json"
    target.write_text("old")

    class Boom(str):
        def encode(self, *args: object, **kwargs: object) -> bytes:  # type: ignore[override]
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, Boom("new"))
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.json"]


def test_a_link_planted_at_the_old_temporary_name_is_not_followed(tmp_path: Path) -> None:
    """The journal used to write `journal.tmp` and rename it: a link planted there truncated
    the file it pointed at and then became the journal."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "journal.tmp").symlink_to(outside)
    journal = Journal(meta / "journal.jsonl")
    edit = Edit(path="train.py", before_hash=None, after_hash="a" * 64)
    journal.replace([edit])
    assert outside.read_text() == "precious\n"
    assert not (meta / "journal.jsonl").is_symlink()
    assert journal.edits() == [edit]
