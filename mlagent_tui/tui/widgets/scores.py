"""The scores pane: validate scores over steps (a search: over nodes, in the order they
finished) as a sparkline, beside baseline and medal lines."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from ..view import SessionView

LEVELS = ("gold", "silver", "bronze", "median")
_LEVEL_STYLE = {"gold": "yellow", "silver": "white", "bronze": "dark_orange", "median": "cyan"}


def reaches(score: float, level: float, higher_is_better: bool) -> bool:
    return score >= level if higher_is_better else score <= level


def scores_text(view: SessionView) -> Text:
    """The last and best score, then the baseline and thresholds, best level first."""
    better = "higher" if view.higher_is_better else "lower"
    text = Text()
    if view.scores:
        step, last = view.scores[-1]
        where = f"node #{step}" if view.agent == "search" else f"step {step}"
        text.append(f"last {last:.4g} ({where})", style="bold")
        text.append(f" · best {view.best:.4g}\n" if view.best is not None else "\n")
    else:
        text.append("no validate score yet\n", style="dim")
    best = view.best
    for name in LEVELS:
        value = view.thresholds.get(name)
        if value is None:
            continue
        mark = "✓" if best is not None and reaches(best, value, view.higher_is_better) else " "
        text.append(f"{mark} {name:<8}{value:.4g}\n", style=_LEVEL_STYLE[name])
    if view.baseline is not None:
        mark = (
            "✓" if best is not None and reaches(best, view.baseline, view.higher_is_better) else " "
        )
        text.append(f"{mark} baseline {view.baseline:.4g}\n", style="dim")
    text.append(f"({better} is better)", style="dim italic")
    return text


class ScoresPane(Vertical):
    """A sparkline of validate scores (drawn so that up is better) and the levels beside it."""

    DEFAULT_CSS = """
    ScoresPane { height: auto; border: round $warning; }
    ScoresPane > Sparkline { height: 2; margin: 0 1; }
    ScoresPane > Static { height: auto; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Sparkline([], id="spark")
        yield Static("", id="score-levels")

    def on_mount(self) -> None:
        self.border_title = "Validate scores"
        self._key: tuple | None = None

    def show(self, view: SessionView) -> None:
        key = (tuple(view.scores), view.baseline, tuple(view.thresholds.items()), view.best)
        if key == self._key:
            return
        self._key = key
        sign = 1 if view.higher_is_better else -1
        # the chart is drawn so that "better" is always up, whatever the metric's direction
        self.query_one(Sparkline).data = [sign * score for _, score in view.scores]
        self.query_one("#score-levels", Static).update(scores_text(view))
        self.border_title = f"Validate scores · {len(view.scores)}"
