"""Grader for code-speedup: speed-up of compute.py over the original, with its output checked.

The submission and the original (slow) implementation each run in the session's sandbox
(mlagent_tui.taskkit.worker_pool), one side at a time: RUNS_PER_SIDE sandboxed runs of each,
alternately, so nothing of one side runs while the other is timed. The host generates every input
and the expected output before it times a request, sends the input (raw float64 arrays) with the
request, and measures from the request's first byte sent to the reply's last byte received: the
submission's process cannot fake its time, and it cannot compute an output before it has the
input: every timed input is drawn for this grading from the operating system's randomness (the
split's seeds, which follow from the session seed, are not used), so none can be rebuilt, nor
met twice, before it is sent. The score is min(original times) / min(submission times). Every
output is compared with a vectorised reference computed here; a wrong output, an exception or a
crash makes the submission invalid. Higher is better.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from mlagent_tui.taskkit import (
    WORKER_PRELUDE,
    SubmissionError,
    Worker,
    WorkerPool,
    run_grader,
    worker_pool,
)

TIME_LIMIT_S = 40.0  # total for both sides, imports and all calls
RTOL, ATOL = 1e-5, 1e-5  # output tolerance (float32 arithmetic passes)
MIN_SUB_TIME_S = 0.3  # a fast submission is timed on extra inputs until it has run this long
MAX_EXTRA = 40
RUNS_PER_SIDE = 6  # a process can run the same code 1.6 times slower than another started a
# second later (on a shared 2-core VM: 94 ms against 150 ms per call, steady within a process);
# with 3 processes a side, one grading of the unchanged original scored 0.63-1.61. The minimum
# over more, shorter processes, alternating sides, evens that out.
ITEMS_PER_RUN = 2


# the original compute() (env/compute.py), timed as the reference
SLOW_SOURCE = r"""
def compute(data):
    image = data["image"]
    kernels = data["kernels"]
    bias = data["bias"]
    H, W, C = len(image), len(image[0]), len(image[0][0])
    F, K = len(kernels), len(kernels[0])
    out_h, out_w = H - K + 1, W - K + 1

    # convolution + bias + ReLU
    conv = [[[0.0] * F for _ in range(out_w)] for _ in range(out_h)]
    for i in range(out_h):
        for j in range(out_w):
            for f in range(F):
                s = bias[f]
                for di in range(K):
                    for dj in range(K):
                        for c in range(C):
                            s += image[i + di][j + dj][c] * kernels[f][di][dj][c]
                conv[i][j][f] = s if s > 0.0 else 0.0

    # 2 x 2 max-pooling, stride 2
    ph, pw = out_h // 2, out_w // 2
    pooled = [[[0.0] * F for _ in range(pw)] for _ in range(ph)]
    for i in range(ph):
        for j in range(pw):
            for f in range(F):
                pooled[i][j][f] = max(
                    conv[2 * i][2 * j][f],
                    conv[2 * i][2 * j + 1][f],
                    conv[2 * i + 1][2 * j][f],
                    conv[2 * i + 1][2 * j + 1][f],
                )
    return pooled
"""

_COMPUTE_MAIN = r"""
import gc
import numpy as np


def unpack(msg, raw):
    # raw: the image, the kernels and the bias as float64, one after the other
    s = msg["shape"]
    data, start = {}, 0
    for key, dims in (("image", (s["H"], s["W"], s["C"])),
                      ("kernels", (s["F"], s["K"], s["K"], s["C"])), ("bias", (s["F"],))):
        n = 8 * int(np.prod(dims))
        data[key] = np.frombuffer(raw[start:start + n], dtype="<f8").reshape(dims).tolist()
        start += n
    return data


def main():
    loaded = load_submission("compute")
    if loaded is None:
        return
    fn, requests, send = loaded
    for line in requests:
        msg = json.loads(line)
        raw = requests.read(msg.get("nbytes", 0))
        if "prepare" in msg:  # untimed: a clean heap, no collection during the timed request
            gc.enable()
            gc.collect()
            gc.disable()
            send({"ready": True})
            continue
        data = unpack(msg, raw)
        try:
            out = fn(data)
        except BaseException as exc:
            send({"error": "compute() raised %s: %s" % (type(exc).__name__, exc)})
            return
        if out is None:
            send({"error": "compute() returned None"})
            return
        try:
            arr = np.ascontiguousarray(np.asarray(out, dtype="<f8"))
        except BaseException as exc:
            send({"error": "compute() must return a nested list or array of numbers; "
                  "converting its result failed: %s: %s" % (type(exc).__name__, exc)})
            return
        send({"shape": list(arr.shape)}, raw=arr.tobytes())
        del data, out, arr, raw


serve(main)
"""


_FRESH = random.SystemRandom()  # the timed inputs' seeds: nothing of the agent's can know them


def make_input(seed: int, H: int, W: int, C: int, F: int, K: int) -> dict:
    rng = random.Random(seed)
    image = [[[rng.uniform(-1, 1) for _ in range(C)] for _ in range(W)] for _ in range(H)]
    kernels = [
        [[[rng.gauss(0, 0.3) for _ in range(C)] for _ in range(K)] for _ in range(K)]
        for _ in range(F)
    ]
    bias = [rng.uniform(-0.1, 0.1) for _ in range(F)]
    return {"image": image, "kernels": kernels, "bias": bias}


WORKER = WORKER_PRELUDE + _COMPUTE_MAIN
KEYS = ("image", "kernels", "bias")  # the order of the input's arrays in a request


class Timed:
    """One input, ready before any clock starts: its request line and the expected output."""

    def __init__(self, seed: int, shape: dict) -> None:
        data = make_input(seed, **shape)
        self.want = expected_output(data)
        self.msg = {"shape": shape}
        self.raw = b"".join(np.asarray(data[k], dtype="<f8").tobytes() for k in KEYS)


def fresh_input(shape: dict) -> Timed:
    """A timed input of `shape` on a secret 64-bit seed of its own: rebuilding the stream of
    one input tells nothing of the next."""
    return Timed(_FRESH.getrandbits(64), shape)


def run(worker: Worker, item: Timed) -> float:
    """Time compute() on one input from the host; check its output; return the seconds."""
    worker.request({"prepare": True})
    reply, seconds = worker.timed_request(item.msg, item.raw)
    check_output(worker, reply, item.want)
    return seconds


def time_side(
    pool: WorkerPool,
    path: Path,
    label: str,
    items: list[Timed],
    cpu: int | None,
    extra: Iterator[Timed] | None = None,
) -> list[float]:
    """One sandboxed run of `path` timed on `items`, then on `extra` inputs while it has run
    less than its share of MIN_SUB_TIME_S; the run has ended when this returns."""
    worker = pool.start(WORKER, path, label=label, name=label, cpu=cpu)
    try:
        times = [run(worker, item) for item in items]
        for item in extra or ():
            if sum(times) >= MIN_SUB_TIME_S / RUNS_PER_SIDE:
                break
            times.append(run(worker, item))
        return times
    finally:
        worker.close()


def expected_output(data: dict) -> np.ndarray:
    """Vectorised reference: valid cross-correlation + bias, ReLU, 2 x 2 max-pool."""
    image = np.asarray(data["image"], dtype=np.float64)
    kernels = np.asarray(data["kernels"], dtype=np.float64)
    bias = np.asarray(data["bias"], dtype=np.float64)
    H, W, C = image.shape
    F, K = kernels.shape[:2]
    out_h, out_w = H - K + 1, W - K + 1
    conv = np.broadcast_to(bias, (out_h, out_w, F)).copy()
    for di in range(K):
        for dj in range(K):
            conv += image[di : di + out_h, dj : dj + out_w, :] @ kernels[:, di, dj, :].T
    np.maximum(conv, 0.0, out=conv)
    ph, pw = out_h // 2, out_w // 2
    return conv[: 2 * ph, : 2 * pw].reshape(ph, 2, pw, 2, F).max(axis=(1, 3))


def check_output(worker: Worker, reply: dict, want: np.ndarray) -> None:
    shape, data = reply.get("shape"), reply.get("raw")
    if not isinstance(shape, list) or not isinstance(data, bytes):
        raise worker.garbage()
    try:
        got = np.frombuffer(data, dtype="<f8").reshape(shape)
    except (ValueError, TypeError):
        raise worker.garbage() from None
    if got.shape != want.shape:
        raise SubmissionError(f"compute() returned shape {got.shape}, expected {want.shape}")
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        raise SubmissionError(
            f"compute() returned a wrong result (max abs error {np.abs(got - want).max():.3g}; "
            f"tolerance rtol={RTOL:g}, atol={ATOL:g})"
        )


def grade(submission: Path, answers_dir: Path, split: str, sandbox: str = "local") -> float:
    shape = json.loads((answers_dir / f"{split}.json").read_text())["shape"]
    message = (
        f"timing took longer than {TIME_LIMIT_S:.0f} s in total; "
        "compute.py is far too slow or hangs"
    )
    cpu = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    with (
        tempfile.TemporaryDirectory() as tmp,
        worker_pool(TIME_LIMIT_S, message, sandbox=sandbox) as pool,
    ):
        original = Path(tmp) / "original_compute.py"
        original.write_text(SLOW_SOURCE)
        sub_times, ref_times = [], []
        for _ in range(RUNS_PER_SIDE):  # alternate: the submission, then the original
            batch = [fresh_input(shape) for _ in range(ITEMS_PER_RUN)]
            # more inputs for a fast submission, as fresh: nothing to cache
            extra = (fresh_input(shape) for _ in range(MAX_EXTRA // RUNS_PER_SIDE))
            sub_times += time_side(pool, submission, submission.name, batch, cpu, extra)
            # the original's output is checked too: the same work on both sides
            ref_times += time_side(pool, original, "the original compute.py", batch, cpu)
        return min(ref_times) / min(sub_times)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    run_grader(grade)
