"""Nodes per minute of the search's worker loop with one worker and with two, on this machine.

A search worker asks the local model for a node (a prompt of about 1,450 tokens, an answer of
up to 220), then runs its script (a scikit-learn fit of about 1.7 s, with the BLAS/OpenMP
threads a node run gets). With two workers, two contexts generate at once (LocalModel.replicas)
beside the other worker's script. This runs that loop without the tree, so the model's thread
settings are what differ:

  - shared: what the search does, each worker's context evaluates prompts on its share of the
    cores and its scripts get that share of threads;
  - unshared: each context evaluates prompts on all cores and each script gets two threads
    (what the search did before the cores were shared).

    python benchmarks/bench_workers.py [--nodes 12] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from mlagent_tui.core.llm import Message
from mlagent_tui.core.llm.local import LocalModel

sys.path.insert(0, str(Path(__file__).parent))
from bench_contexts import at_once  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (ROOT / "tasks" / "breast-cancer" / "env" / "train.py").read_text()
FIT = (
    "import numpy as np, sklearn.linear_model as lm, sklearn.ensemble as en;"
    "X = np.random.rand(3000, 30); y = (X[:, 0] > .5).astype(int);"
    "en.RandomForestClassifier(50, random_state=0).fit(X, y); lm.LogisticRegression().fit(X, y)"
)


def node_prompt(tag: str) -> list[Message]:
    """A shared prefix (task and parent script) and a suffix of its own, as a node's prompt."""
    memory = "tried a change. " * 80
    text = f"You improve ML scripts.\nScript:\n{SCRIPT * 4}\nMemory {tag}: {memory}\nRewrite it."
    return [Message(role="user", content=text)]


def run_script(threads: int) -> None:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    subprocess.run([sys.executable, "-c", FIT], env=env, check=True)


def worker(model: LocalModel, tag: str, nodes: int, threads: int, out: list[float]) -> None:
    for i in range(nodes):
        model.complete(node_prompt(f"{tag}-{i}"), max_tokens=220, temperature=0.7)
        run_script(threads)
        out.append(time.perf_counter())


def nodes_per_min(base: LocalModel, workers: int, shared: bool, nodes: int) -> float:
    if shared:
        models = base.replicas(workers)
        threads = max(1, min(2, (os.cpu_count() or 1) // workers))
    else:
        base.replicas(1)
        models = [base] + [LocalModel(seed=1009 * k) for k in range(1, workers)]
        threads = 2
    done: list[float] = []
    calls = [
        (worker, (m, f"{workers}{k}", nodes // workers, threads, done))
        for k, m in enumerate(models)
    ]
    wall = at_once(calls)
    for m in models[1:]:
        m.close()
    base.replicas(1)
    return 60 * len(done) / wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--nodes", type=int, default=12, help="nodes per measurement")
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    base = LocalModel()
    run_script(2)  # the imports' first load is not a node's
    one = [nodes_per_min(base, 1, True, args.nodes) for _ in range(args.repeats)]
    w1 = sum(one) / len(one)
    print(f"one worker: {w1:.2f} nodes/min ({', '.join(f'{x:.2f}' for x in one)})")
    for shared in (False, True):
        two = [nodes_per_min(base, 2, shared, args.nodes) for _ in range(args.repeats)]
        w2 = sum(two) / len(two)
        label = "shared cores" if shared else "unshared"
        runs = ", ".join(f"{x:.2f}" for x in two)
        print(f"two workers, {label}: {w2:.2f} nodes/min ({runs}) -> {w2 / w1:.2f}x one worker")
    base.close()


if __name__ == "__main__":
    main()
