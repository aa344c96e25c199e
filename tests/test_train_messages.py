"""What mlagent-train says, tested through the functions that say it (a training run itself is
minutes of torch on a CPU): where the policy starts, each phase once in a log, the update line
once, and plainly when an update changed nothing."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from mlagent_tui.core.store import UpdateRecord
from trainer.recipes.loop import _progress
from trainer.recipes.messages import phase_printer, start_text, unchanged_note, update_line


def _record(equal: int, groups: int, reward: float, valid: float) -> UpdateRecord:
    return UpdateRecord(
        update=1, reward_mean=reward, reward_std=0.0, valid_rate=valid, loss=0.0, kl=0.0,
        exec_seconds_mean=0.0, tokens_per_s=0.0, seconds=3.0, all_equal_groups=equal,
        extra={"groups": groups},
    )  # fmt: skip


def test_an_update_that_changed_nothing_says_why() -> None:
    note = unchanged_note(_record(1, 1, -1.0, 0.0))
    assert note is not None and note.startswith("this update changed nothing")
    assert "same reward (-1.000, no answer valid)" in note and "every advantage is zero" in note
    assert "--group-size" in note
    assert unchanged_note(_record(1, 2, 0.2, 0.5)) is None  # one group had a spread
    assert unchanged_note(_record(0, 0, 0.0, 0.0)) is None  # no group at all
    # sft and distil imitate every item: equal rewards do not stop them learning
    assert unchanged_note(_record(1, 1, 1.0, 1.0), imitates=True) is None


def test_the_start_is_named() -> None:
    bare = start_text("smollm2", None, None)
    assert "the bare base smollm2" in bare and "--base-model local starts from it" in bare
    assert start_text("local", None, None).startswith("the shipped model")
    assert "run sft-1 (--init)" in start_text("x", "sft-1", None)
    assert "resumed" in start_text("x", None, Path("run/checkpoints/update-0001"))


def _log() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=200), out


def test_a_log_gets_each_phase_once_and_the_update_line_once() -> None:
    console, out = _log()
    say = phase_printer(console, 1)
    for text in ("group 1 of 1 (t): generating 2 answers", "group 1 of 1 (t): generating 2 answers",
                 "group 1 of 1 (t): executing 2 in parallel"):  # fmt: skip
        say(text)
    line = update_line(1, _record(1, 1, -1.0, 0.0))
    with _progress(console) as progress:  # as the loop runs it: a bar, then the update's line
        bar = progress.add_task("starting", total=1)
        progress.update(bar, advance=1, description=line)
        console.print(line)
    text = out.getvalue()
    assert text.count("generating 2 answers") == 1 and "executing 2 in parallel" in text
    assert text.count("update 1: reward -1.000, valid 0%, loss 0.0000") == 1, text


def test_export_hides_the_libraries_notes_on_their_apis(capfd) -> None:  # noqa: ANN001
    import logging
    import warnings

    from transformers.utils import logging as hf_logging

    from trainer.cli.export import library_notes_hidden

    library = logging.getLogger("transformers")
    level = library.level
    note = hf_logging.get_logger("transformers.utils.generic")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with library_notes_hidden():
            warnings.warn("`past_key_values` is deprecated", FutureWarning, stacklevel=1)
            note.warning("cache is deprecated")
            assert not note.isEnabledFor(logging.WARNING)
    assert not [w for w in seen if issubclass(w.category, FutureWarning)]
    assert "deprecated" not in capfd.readouterr().err
    # afterwards the library's own level is back: its warnings show as they did before
    # (checked on the level, not on stderr: transformers' handler keeps the stream it was
    # made with, which an earlier test's capture may have been)
    assert library.level == level
    assert note.isEnabledFor(logging.WARNING) == (
        (level or logging.getLogger().getEffectiveLevel()) <= logging.WARNING
    )
