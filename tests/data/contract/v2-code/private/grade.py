"""A code grader of contract 2: solver.py runs in the session's sandbox through taskkit's worker
pool; run_grader hands the grade function the backend."""

import json
from pathlib import Path

from mlagent_tui.taskkit import WORKER_PRELUDE, SubmissionError, run_grader, worker_pool

WORKER = (
    WORKER_PRELUDE
    + r"""
def main():
    loaded = load_submission("square")
    if loaded is None:
        return
    fn, requests, send = loaded
    for line in requests:
        x = json.loads(line)["x"]
        try:
            send({"y": fn(x)})
        except Exception as exc:
            send({"error": "square(%r) raised %s: %s" % (x, type(exc).__name__, exc)})


serve(main)
"""
)


def grade(submission: Path, answers_dir: Path, split: str, sandbox: str) -> float:
    cases = json.loads((answers_dir / f"{split}.json").read_text())
    with worker_pool(20.0, "solver.py took longer than 20 s", sandbox=sandbox) as pool:
        worker = pool.start(WORKER, submission, label="solver.py")
        right = 0
        for x, y in cases:
            got = worker.request({"x": x}).get("y")
            if not isinstance(got, int):
                raise SubmissionError(f"square({x}) returned {got!r}, not an int")
            right += got == y
    return right / len(cases)


if __name__ == "__main__":
    run_grader(grade)
