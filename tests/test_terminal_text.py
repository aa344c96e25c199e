"""Text the agent or a model made reaches a terminal shown, never obeyed.

A file name, a program's output, an action name or an answer with escape sequences would set
the window title (OSC 0), write the clipboard (OSC 52), clear the screen or ring the bell, and
Rich markup in it would restyle what the person reads. The session below does all of that; the
real `mlagent` CLI (run, sessions show, sessions list) and the TUI must show it as visible
escapes and literal brackets.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import pytest
from textual.geometry import Region

from mlagent_tui.core.bench.plots import plot_score_over_steps
from mlagent_tui.core.safe_text import visible, visible_deep
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.tui.app import MlagentApp
from mlagent_tui.tui.screens.session import SessionScreen

from .agent_helpers import research, write_replay
from .conftest import TINY, bwrap_ready
from .test_cli import mlagent

TITLE = "\x1b]0;pwned\x07"
CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"
CLEAR = "\x1b[2J"
MARKUP = "[bold red]x[/]"
BIDI = "\u202e"
NAME = f"{TITLE}.txt"
# the script itself is plain ASCII (a file name with controls is refused by the workspace); the
# file it makes and what it prints are not
SCRIPT = (
    'open("\\x1b]0;pwned\\x07.txt", "w").write("x")\n'
    'print("[bold red]x[/] \\x1b]52;c;cHduZWQ=\\x07 \\x1b[2J \\u202eevil \\x9b31m \\x00")\n'
    'print("second line \\x1b]0;pwned\\x07")\n'
)
RESPONSES = [
    research("Write File", {"file_name": "evil.py", "content": SCRIPT}, thought=CLEAR + MARKUP),
    research("Execute Script", {"script_name": "evil.py"}, plan=f"1. {TITLE} {MARKUP}"),
    research("List Files", {"dir_path": "."}),
    research(f"{CLEAR}Nope{TITLE}{MARKUP}", {}),
    research("Final Answer", {"final_answer": f"{MARKUP} {CLIPBOARD} {CLEAR}"}),
]
RAW = ("\x1b", "\x07", "\x9b", "\x00", BIDI)


def _assert_safe(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"raw {ch!r} reaches the terminal: {text!r}"


# -- the sanitiser --------------------------------------------------------------------------------
def test_visible_shows_every_control_and_keeps_text() -> None:
    assert visible("plain ünïcode — 日本\tand\nlines") == "plain ünïcode — 日本\tand\nlines"
    assert visible(TITLE) == "\\x1b]0;pwned\\x07"
    assert visible(CLEAR + "\x9b2J\x7f\x00\r") == "\\x1b[2J\\x9b2J\\x7f\\x00\\r"
    assert visible("a\r\nb") == "a\nb"  # a Windows line end is a line end
    assert visible(f"{BIDI}gnp.exe\u2066\u200f") == "\\u202egnp.exe\\u2066\\u200f"
    assert visible(MARKUP) == MARKUP  # markup is left as text: the caller never renders it
    nested = visible_deep({"k\x1b": ["\x07", ("\x9b",)], "n": 3})
    assert nested == {"k\\x1b": ["\\x07", ("\\x9b",)], "n": 3}


# -- the CLI, run as a person runs it -------------------------------------------------------------
@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_cli_run_and_sessions_show_nothing_raw(tmp_path) -> None:  # noqa: ANN001
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "evil.jsonl", RESPONSES)
    env = {"COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb"}
    run = mlagent("run", "--task-dir", str(TINY), "--model", f"replay:{replay}", home=home, env=env)
    out = run.stdout + run.stderr
    _assert_safe(out)
    assert "\\x1b]0;pwned\\x07.txt" in out  # the file name, shown
    assert f"\\x1b[2JNope\\x1b]0;pwned\\x07{MARKUP}" in out  # the action, brackets and all
    listed = mlagent("sessions", "list", "--json", home=home, check=True)
    sid = json.loads(listed.stdout)["sessions"][0]["id"]
    for args in (("sessions", "show", sid), ("sessions", "list")):
        proc = mlagent(*args, home=home, env=env, check=True)
        _assert_safe(proc.stdout + proc.stderr)
    shown = mlagent("sessions", "show", sid, home=home, env=env).stdout
    assert f"\\x1b[2JNope\\x1b]0;pwned\\x07{MARKUP}" in shown


# -- the TUI: what its widgets render -------------------------------------------------------------
def _rendered(screen: SessionScreen) -> str:
    """Every segment every widget of the screen renders, as the terminal would get it."""
    out = []
    for widget in screen.walk_children():
        if not widget.display or widget.size.area == 0:
            continue
        region = Region(0, 0, widget.size.width, widget.size.height)
        for strip in widget.render_lines(region):
            out.append("".join(segment.text for segment in strip))
    return "\n".join(out)


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_tui_shows_every_step_without_raw_controls(tmp_path, home, store, tiny_task) -> None:  # noqa: ANN001
    replay = write_replay(tmp_path / "evil.jsonl", RESPONSES)
    session = Session.create(
        home, store, SessionConfig(task_dir=str(tiny_task), model=f"replay:{replay}")
    )
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, SessionScreen)
            seen = []
            for step in range(1, screen.view.last_step + 1):
                screen.selected = step
                screen.refresh_panes()
                await pilot.pause()
                text = _rendered(screen)
                _assert_safe(text)
                seen.append(text)
            everything = "\n".join(seen)
            assert "\\x1b]0;pwned\\x07.txt" in everything  # the file name, shown
            assert "\\x1b]52;c;cHduZWQ=\\x07" in everything  # the program's output, shown
            assert MARKUP in everything  # brackets as text, not a style

    asyncio.run(go())


# -- figures: a task's or a model's name is a label, not mathtext nor a control -------------------
def test_plot_labels_take_names_as_text(tmp_path: Path) -> None:
    task = f"synth{TITLE} $\\frac{{$ {MARKUP}"  # a synthesised task's name is a model's text
    curves = {task: {"openai/$\\sqrt{x$": [1.0, 0.5], "replay:/a/b/x.jsonl": [1.0, 1.0]}}
    info = {task: {"metric": "mae", "higher_is_better": False, "baseline": 1.0, "thresholds": {}}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = plot_score_over_steps(curves, info, tmp_path / "steps.png")
    assert path.stat().st_size > 0
    assert not [w for w in caught if "Glyph" in str(w.message)]  # no control reached the font


def test_the_report_table_keeps_its_columns_whatever_the_names() -> None:
    from mlagent_tui.core.bench.metrics import TaskModelResult
    from mlagent_tui.core.bench.report import BenchReport, render_markdown
    from mlagent_tui.core.bench.runner import BenchConfig, TaskRef

    task, model = f"t|x{TITLE}\nline", "api/a|b`c"
    numbers = dict.fromkeys(
        ("success_rate", "valid_rate", "above_median_rate", "bronze_rate", "silver_rate",
         "gold_rate", "any_medal_rate", "mean_tokens", "mean_cost_usd", "mean_wall_seconds"),
        0.0,
    )  # fmt: skip
    result = TaskModelResult(
        task=task, model=model, runs=1, mean_improvement_pct=None, sem_improvement_pct=None,
        best_attempt=None, best_submission=None, failures={}, **numbers,
    )  # fmt: skip
    config = BenchConfig(tasks=[TaskRef(name=task)], models=[model])
    report = BenchReport(
        bench_id="b", status="finished", config=config, results=[result],
        aup={"best_attempt": {model: 0.5}}, runs=[],
    )  # fmt: skip
    text = render_markdown(report)
    _assert_safe(text)
    rows = [line for line in text.splitlines() if line.startswith("|")]
    for row in rows:  # a table's rows all have the columns of its header
        cells = row.replace("\\|", "").count("|")
        header = next(r for r in reversed(rows[: rows.index(row) + 1]) if "---" not in r)
        assert cells == header.replace("\\|", "").count("|"), row
    assert "\\x1b]0;pwned\\x07" in text


def test_the_trainer_error_line_shows_text(capsys: pytest.CaptureFixture[str]) -> None:
    import typer

    from trainer.cli.app import fail

    with pytest.raises(typer.Exit):
        fail(f"no task {TITLE}{MARKUP}")  # a task's name may be a model's text
    text = capsys.readouterr().err
    _assert_safe(text)
    assert f"\\x1b]0;pwned\\x07{MARKUP}" in text
