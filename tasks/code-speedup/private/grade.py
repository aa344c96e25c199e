"""Grader for code-speedup: speed-up of compute.py over the original, with its output checked.

The submission and the original (slow) implementation run in worker processes (three of each,
all pinned to one CPU core), on the same freshly generated inputs, alternately; each worker times
only the compute() call (the garbage collector is off during the call). The score is
min(original times) / min(submission times). Every output is compared with a vectorised reference
computed here; a wrong output, an exception or a crash makes the submission invalid. Higher is
better.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from mlagent_tui.core.grading import SubmissionError, run_grader

TIME_LIMIT_S = 40.0  # total for both workers, import and all calls
RTOL, ATOL = 1e-5, 1e-5  # output tolerance (float32 arithmetic passes)
MIN_SUB_TIME_S = 0.3  # a fast submission is timed on extra inputs until it has run this long
MAX_EXTRA = 40
WORKERS_PER_SIDE = 3


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

WORKER_MAIN = r"""
import gc, importlib.util, json, os, sys
from time import perf_counter


def main():
    proto_in = os.fdopen(os.dup(0), "r")
    proto_out = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # whatever the code prints goes to stderr
    path, label = sys.argv[1], sys.argv[2]
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))

    def send(obj):
        proto_out.write(json.dumps(obj) + "\n")
        proto_out.flush()

    try:
        spec = importlib.util.spec_from_file_location("submission", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = mod
        spec.loader.exec_module(mod)
    except BaseException as exc:
        send({"error": "importing %s failed: %s: %s" % (label, type(exc).__name__, exc)})
        return
    fn = getattr(mod, "compute", None)
    if not callable(fn):
        send({"error": "%s defines no function compute()" % label})
        return
    send({"ready": True})
    for line in proto_in:
        msg = json.loads(line)
        data = make_input(msg["seed"], **msg["shape"])
        gc.collect()
        gc.disable()
        try:
            start = perf_counter()
            out = fn(data)
            elapsed = perf_counter() - start
        except BaseException as exc:
            send({"error": "compute() raised %s: %s" % (type(exc).__name__, exc)})
            return
        finally:
            gc.enable()
        if out is None:
            send({"error": "compute() returned None"})
            return
        try:
            payload = json.dumps({"time": elapsed, "output": out})
        except (TypeError, ValueError):  # e.g. a numpy array
            try:
                import numpy as np

                out = np.asarray(out, dtype=float).tolist()
                payload = json.dumps({"time": elapsed, "output": out})
            except BaseException as exc:
                send({"error": "compute() must return a nested list or array of numbers; "
                      "converting its result failed: %s: %s" % (type(exc).__name__, exc)})
                return
        proto_out.write(payload + "\n")
        proto_out.flush()
        del data, out, payload


main()
"""


def make_input(seed: int, H: int, W: int, C: int, F: int, K: int) -> dict:
    rng = random.Random(seed)
    image = [[[rng.uniform(-1, 1) for _ in range(C)] for _ in range(W)] for _ in range(H)]
    kernels = [
        [[[rng.gauss(0, 0.3) for _ in range(C)] for _ in range(K)] for _ in range(K)]
        for _ in range(F)
    ]
    bias = [rng.uniform(-0.1, 0.1) for _ in range(F)]
    return {"image": image, "kernels": kernels, "bias": bias}


# the workers generate their inputs with the very same make_input(), sent as source
WORKER = "import random\n\n\n" + inspect.getsource(make_input) + WORKER_MAIN


class _Timeout(Exception):
    pass


class Worker:
    """One implementation of compute() in its own process, timed one input at a time."""

    def __init__(self, path: Path, label: str, cpu: int | None):
        self.label = label
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path.resolve()), label],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(path.resolve().parent),
            # the same string hashes in both workers: with random ones, dict layouts alone make
            # one process of the same code up to ~15% slower than another
            env={**os.environ, "PYTHONHASHSEED": "0"},
            text=True,
        )
        if cpu is not None:
            try:  # both workers on the same core: they take turns, so neither gets a faster one
                os.sched_setaffinity(self.proc.pid, {cpu})
            except OSError:
                pass

    def start(self) -> None:
        first = self._read()
        if "error" in first:
            raise SubmissionError(first["error"])

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise SubmissionError(f"{self.label}'s process ended unexpectedly (exit code {code})")
        try:
            msg = json.loads(line)
        except ValueError as exc:
            raise SubmissionError(f"{self.label}'s process sent garbage") from exc
        if not isinstance(msg, dict):
            raise SubmissionError(f"{self.label}'s process sent garbage")
        return msg

    def run(self, seed: int, shape: dict) -> dict:
        request = {"seed": seed, "shape": shape}
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise SubmissionError(f"{self.label}'s process ended unexpectedly") from exc
        reply = self._read()
        if "error" in reply:
            raise SubmissionError(str(reply["error"]))
        elapsed = reply.get("time")
        if not isinstance(elapsed, float) or not elapsed > 0:
            raise SubmissionError(f"{self.label}'s process sent garbage")
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


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


def check_output(reply: dict, want: np.ndarray) -> None:
    try:
        got = np.asarray(reply.get("output"), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise SubmissionError(
            f"compute() must return a nested list or array of numbers ({exc})"
        ) from None
    if got.shape != want.shape:
        raise SubmissionError(f"compute() returned shape {got.shape}, expected {want.shape}")
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        raise SubmissionError(
            f"compute() returned a wrong result (max abs error {np.abs(got - want).max():.3g}; "
            f"tolerance rtol={RTOL:g}, atol={ATOL:g})"
        )


def grade(submission: Path, answers_dir: Path, split: str) -> float:
    spec = json.loads((answers_dir / f"{split}.json").read_text())
    shape, seeds = spec["shape"], spec["seeds"]

    def on_alarm(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    workers: list[Worker] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            ref_path = Path(tmp) / "original_compute.py"
            ref_path.write_text(SLOW_SOURCE)
            cpu = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
            # several processes per side: a process can be ~15% slower than another running the
            # same code (memory layout), and the minimum over a few of them evens that out
            subs, refs = [], []
            for _ in range(WORKERS_PER_SIDE):
                subs.append(Worker(submission, submission.name, cpu))
                workers.append(subs[-1])
                refs.append(Worker(ref_path, "the original compute.py", cpu))
                workers.append(refs[-1])
            for w in workers:
                w.start()
            sub_times, ref_times = [], []
            for k, seed in enumerate(seeds):  # alternate: submission, then the original
                want = expected_output(make_input(seed, **shape))
                reply = subs[k % WORKERS_PER_SIDE].run(seed, shape)
                check_output(reply, want)
                sub_times.append(reply["time"])
                # the original's output is fetched and checked too: the same work on both sides
                reply = refs[k % WORKERS_PER_SIDE].run(seed, shape)
                check_output(reply, want)
                ref_times.append(reply["time"])
            extra = 0
            while sum(sub_times) < MIN_SUB_TIME_S and extra < MAX_EXTRA:
                extra += 1
                seed = (seeds[0] * 7919 + extra) % 2**31  # fresh inputs: nothing to cache
                want = expected_output(make_input(seed, **shape))
                reply = subs[extra % WORKERS_PER_SIDE].run(seed, shape)
                check_output(reply, want)
                sub_times.append(reply["time"])
            return min(ref_times) / min(sub_times)
        except _Timeout:
            raise SubmissionError(
                f"timing took longer than {TIME_LIMIT_S:.0f} s in total; "
                "compute.py is far too slow or hangs"
            ) from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
            for w in workers:
                w.close()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    run_grader(grade)
