"""Executor overhead: local (bubblewrap) vs bare subprocess; docker executor vs `docker exec`."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlagent_tui.core.sandbox.local import LocalExecutor

REPEATS = 30


def timed(fn, repeats: int = REPEATS) -> float:  # noqa: ANN001
    fn()  # warm caches
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench_local(ws: Path) -> None:
    ex = LocalExecutor()
    bare = timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
    sandboxed = timed(lambda: ex.run([sys.executable, "-c", "pass"], cwd=ws))
    print(
        f"local:  bare {bare * 1000:.1f} ms, sandboxed {sandboxed * 1000:.1f} ms, "
        f"overhead {(sandboxed - bare) * 1000:.1f} ms (target <= 25 ms; {ex.isolation})"
    )


def bench_docker(ws: Path) -> None:
    try:
        from mlagent_tui.core.sandbox.docker import DockerExecutor

        ex = DockerExecutor(ws)
    except Exception as exc:  # noqa: BLE001
        print(f"docker: skipped ({exc})")
        return
    try:
        cid = ex.container.id
        cli = timed(
            lambda: subprocess.run(["docker", "exec", cid, "python3", "-c", "pass"], check=True), 15
        )
        ours = timed(lambda: ex.run(["python3", "-c", "pass"], cwd=ws), 15)
        print(
            f"docker: `docker exec` {cli * 1000:.1f} ms, executor {ours * 1000:.1f} ms, "
            f"overhead over docker exec {(ours - cli) * 1000:.1f} ms (target <= 150 ms)"
        )
    finally:
        ex.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bench_local(Path(tmp))
        bench_docker(Path(tmp))


if __name__ == "__main__":
    main()
