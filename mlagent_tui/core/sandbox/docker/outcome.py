"""How a docker step's ending reads: time-out, out of memory, over the disk limit, or its own
exit. Kept apart from running the step (executor.py) so the rules read in one place."""

from __future__ import annotations

from ..base import ExecResult, OutputCapture, killed_reason_from


def step_result(
    shell: str,
    exit_code: int | None,
    duration: float,
    timeout_s: float,
    capture: OutputCapture,
    *,
    disk: bool,
    fired: bool,
    oom_kills: tuple[int | None, int | None],
    peak_mb: float,
) -> ExecResult:
    """The step's result: `fired` = the host's watchdog killed it, `oom_kills` = the cgroup's
    OOM-kill count before and after (None where unreadable: then exit 137 alone says OOM),
    `disk` = the disk watch killed it (never a time-out, never a clean exit)."""
    capture.close()
    output = capture.text()
    # `timeout` inside the container exits 124; a KILL past the grace reads 137
    timed_out = not disk and (
        exit_code == 124 or fired or (exit_code == 137 and duration >= timeout_s)
    )
    before, after = oom_kills
    if before is not None and after is not None:
        oom = after > before
    else:
        oom = exit_code == 137 and not timed_out
    monitor = "disk" if disk else "memory" if oom else None
    if disk and exit_code == 0:
        exit_code = 137  # killed past the limit, or finished over it: never a clean exit
    return ExecResult(
        command=shell,
        exit_code=exit_code,
        duration_s=round(duration, 4),
        peak_rss_mb=peak_mb,
        timed_out=timed_out,
        killed_reason=killed_reason_from(exit_code, output[-4000:], timed_out, monitor),
        output=output,
        output_truncated=capture.truncated,
        isolation="docker",
    )
