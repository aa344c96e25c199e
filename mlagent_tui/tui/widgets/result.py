"""The end banner: once a session has ended (live, or at the last step of a replay), how it
ended, the graded final score against the baseline, and the medal, in one place on screen.

The status line's best validate score is not the result: the session is graded on its final
submission (the test split), which can score differently.
"""

from __future__ import annotations

from rich.text import Text
from textual.events import Resize
from textual.widgets import Static

from ...core.safe_text import visible
from ..status_text import ENDED
from ..view import SessionView

_CLASS = {"finished": "-finished", "failed": "-failed"}
_WORDS = {"budget": "out of budget"}


def improvement_pct(score: float, baseline: float, higher_is_better: bool) -> float | None:
    """The change over the baseline in percent, positive when better (MLAgentBench's)."""
    if not baseline:
        return None
    sign = 1 if higher_is_better else -1
    return sign * (score - baseline) / abs(baseline) * 100


def level_with(score: float, baseline: float) -> bool:
    """Equal at the precision the task states its baseline (0.87826 is 0.8783's level)."""
    _, _, decimals = repr(float(baseline)).partition(".")
    places = max(len(decimals), 4)  # a baseline written 1.0 still compares at 4 places
    return "e" not in decimals and round(score, places) == round(baseline, places)


def result_text(view: SessionView, width: int = 0) -> Text:
    """`finished: submitted (Final Answer)`, then the final score, baseline and medal (and the
    best validate score where `width` leaves room: 0 is no limit)."""
    text = Text()
    text.append(f"Session {_WORDS.get(view.state, view.state)}", style="bold")
    if view.ended_reason:
        text.append(f": {visible(view.ended_reason)}")
    text.append("\n")
    if view.final_score is None or not view.final_valid:
        text.append("final score: none (no valid submission was graded)", style="bold")
    else:
        text.append(f"final score {view.final_score:.4g}", style="bold")
        if view.baseline is not None:
            text.append(f" vs baseline {view.baseline:.4g}")
            pct = improvement_pct(view.final_score, view.baseline, view.higher_is_better)
            if level_with(view.final_score, view.baseline):
                text.append(" (level)")
            elif pct is not None:
                word = "better" if pct >= 0 else "worse"
                text.append(f" ({abs(pct):.1f}% {word})", style="green" if pct >= 0 else "red")
    if view.final_valid and view.final_score is not None:
        text.append(" · medal: ")
        text.append(view.medal or "none", style="bold yellow" if view.medal else "dim")
        median = view.thresholds.get("median")
        if not view.medal and median is not None:
            above = (view.final_score >= median) == view.higher_is_better
            text.append(f" ({'above' if above else 'below'} median)", style="dim")
    best = f" · best validate {view.best:.4g}" if view.best is not None else ""
    if best and (not width or len(text.plain.rsplit("\n", 1)[-1] + best) <= width):
        text.append(best, style="dim")
    return text


class EndBanner(Static):
    """Hidden while the session runs; shown, coloured by the outcome, once it has ended."""

    DEFAULT_CSS = """
    EndBanner { display: none; height: auto; padding: 0 1; background: $primary-darken-2; }
    EndBanner.-finished { background: $success-darken-2; }
    EndBanner.-failed { background: $error-darken-2; }
    """

    _view: SessionView | None = None

    def show(self, view: SessionView) -> None:
        self._view = view
        ended = view.state in ENDED
        self.display = ended
        for state, name in _CLASS.items():
            self.set_class(ended and view.state == state, name)
        if ended:
            self.update(result_text(view, self.content_region.width or self.app.size.width - 2))

    def on_resize(self, event: Resize) -> None:
        if self._view is not None:  # the best validate score shows where it fits
            self.show(self._view)
