"""Search vs the linear solve agent with the shipped local model, on held-out seeds of the
training tasks and on the held-out tasks (the split benchmarks/learning_curve.py uses).

Per (task, seed) it runs a solve session and a search session at the same budget of model
calls (default 24), in-process, and reads the stores back. It prints:
  - better-than-baseline rate and medal rate of each agent, with 95% Wilson intervals;
  - nodes per minute of the search with --workers 2 vs --workers 1 (on the first pairs);
  - the selection gap: the chosen node's test score vs the node validation alone picks;
  - the tree's overhead per node (workspace copy, snapshot, events), in ms;
  - the valid rate per operator form (whole script vs one search/replace edit).

    .venv/bin/python benchmarks/search_vs_linear.py                  # the full run
    .venv/bin/python benchmarks/search_vs_linear.py --limit 2 --calls 8   # a small one
    .venv/bin/python benchmarks/search_vs_linear.py --model starter --limit 1   # harness only
    # in parts: one seed's searches, then the other seed's pairs, reported together
    .venv/bin/python benchmarks/search_vs_linear.py --seeds 100 --agents search --json > a.json
    .venv/bin/python benchmarks/search_vs_linear.py --seeds 101 --rows a.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from learning_curve import EVAL_SEEDS, HELD_OUT, TRAIN_TASKS  # noqa: E402

from mlagent_tui.core.home import Home  # noqa: E402
from mlagent_tui.core.session import Session, SessionConfig  # noqa: E402
from mlagent_tui.core.store import Store  # noqa: E402
from mlagent_tui.core.tasks import find_task  # noqa: E402


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def pairs(args: argparse.Namespace) -> list[tuple[str, int]]:
    """Held-out seeds of the training tasks, then the held-out tasks (on the same seeds)."""
    seeds = [int(s) for s in args.seeds.split(",")]
    tasks = [t for t in (args.tasks or f"{TRAIN_TASKS},{HELD_OUT}").split(",") if t]
    out = [(t, s) for s in seeds for t in tasks]
    held = [p for p in out if p[0] in HELD_OUT.split(",")]
    train = [p for p in out if p not in held]
    mixed = [p for pair in zip(train, held, strict=False) for p in pair]  # both kinds early
    rest = train[len(held) :] + held[len(train) :]
    return (mixed + rest)[: args.limit or None]


def starter_replay(task: str, seed: int, calls: int, folder: Path) -> str:
    """`--model starter`: a replay of the task's own starter script for every call, so the
    figures measure the harness alone (generation costs nothing, as with a fast API model)."""
    ws, private = folder / "ws", folder / "private"
    find_task(task).prepare(ws, private, seed=seed)
    code = (ws / "train.py").read_text()
    reply = json.dumps({"content": f"Plan: run the starter\n```python\n{code}```\n"})
    path = folder / f"{task}-{seed}.jsonl"
    path.write_text((reply + "\n") * (calls * 3))
    return f"replay:{path}"


def run_one(home: Home, store: Store, task: str, seed: int, agent: str, **cfg: Any) -> dict:
    model = cfg.pop("model")
    if model == "starter":
        model = starter_replay(task, seed, cfg["max_steps"], Path(tempfile.mkdtemp()))
    if agent == "solve":  # as `mlagent run` runs it: from the starter, improving by edits
        cfg.setdefault("solve_starter", True)
    config = SessionConfig(task=task, model=model, agent=agent, seed=seed, **cfg)
    started = time.monotonic()
    session = Session.create(home, store, config)
    result = session.run()
    session.close()
    spec = find_task(task).spec
    score = result.final_score if result.valid else None
    better = score is not None and spec.better(score, spec.baseline.score)
    row = {
        "task": task,
        "seed": seed,
        "agent": agent,
        "workers": cfg.get("workers"),
        "session": result.session_id,
        "score": score,
        "baseline": spec.baseline.score,
        "better": better,
        "medal": result.medal,
        "steps": result.steps,
        "wall_s": round(time.monotonic() - started, 2),
    }
    if agent == "search":
        row.update(search_figures(store, result.session_id, spec.metric.higher_is_better))
    return row


def search_figures(store: Store, sid: str, higher: bool) -> dict:
    events = store.events(sid)
    finished = [e for e in events if e.kind == "node_finished"]
    created = {e.payload.node: e.payload for e in events if e.kind == "node_created"}
    sel = [e.payload for e in events if e.kind == "selection_made"]
    forms: dict[str, list[int]] = {}
    for e in finished:
        form = created[e.payload.node].form if e.payload.node in created else "whole"
        forms.setdefault(form, []).append(int(e.payload.status == "valid"))
    span = (finished[-1].ts - events[0].ts) / 60 if finished else 0.0
    gap = None
    if sel and sel[0].test_score is not None and sel[0].validation_test_score is not None:
        sign = 1 if higher else -1
        gap = sign * (sel[0].test_score - sel[0].validation_test_score)
    return {
        "nodes": len(finished),
        "nodes_per_min": round(len(finished) / span, 2) if span else None,
        "overhead_ms": [e.payload.overhead_ms for e in finished if e.payload.overhead_ms],
        "forms": forms,
        "selection_gap": gap,  # > 0: the hidden pick scored better on test than validation's
        "hidden_split": bool(sel and sel[0].hidden_split),
    }


def rate(rows: list[dict], key: str) -> str:
    k = sum(1 for r in rows if (r[key] if key != "medal" else r["medal"] is not None))
    low, high = wilson(k, len(rows))
    return f"{k}/{len(rows)} = {k / max(len(rows), 1):.0%} [95% {low:.0%}-{high:.0%}]"


def report(rows: list[dict]) -> dict:
    solve = [r for r in rows if r["agent"] == "solve"]
    search = [r for r in rows if r["agent"] == "search" and r["workers"] == 2]
    one = [r for r in rows if r["agent"] == "search" and r["workers"] == 1]
    paired = {(r["task"], r["seed"]): r for r in search}
    speed = [
        (paired[(r["task"], r["seed"])]["nodes_per_min"], r["nodes_per_min"])
        for r in one
        if (r["task"], r["seed"]) in paired and r["nodes_per_min"]
    ]
    overhead = [ms for r in search + one for ms in r["overhead_ms"]]
    gaps = [r["selection_gap"] for r in search if r["selection_gap"] is not None]
    forms: dict[str, list[int]] = {}
    for r in search + one:
        for form, vals in r["forms"].items():
            forms.setdefault(form, []).extend(vals)
    out = {
        "solve_better": rate(solve, "better"),
        "search_better": rate(search, "better"),
        "solve_medal": rate(solve, "medal"),
        "search_medal": rate(search, "medal"),
        "nodes_per_min_w2_vs_w1": [
            {"w2": a, "w1": b, "ratio": round(a / b, 2) if b else None} for a, b in speed
        ],
        # over all pairs: the mean of the pairs' ratios, and the ratio of the mean rates
        "w2_vs_w1_mean_ratio": round(statistics.mean(a / b for a, b in speed), 2)
        if speed
        else None,
        "w2_vs_w1_ratio_of_means": round(
            statistics.mean(a for a, _ in speed) / statistics.mean(b for _, b in speed), 2
        )
        if speed
        else None,
        "selection_gap_mean": round(statistics.mean(gaps), 6) if gaps else None,
        "selection_gaps": gaps,
        "overhead_ms_per_node": {
            "mean": round(statistics.mean(overhead), 1) if overhead else None,
            "max": max(overhead) if overhead else None,
        },
        "valid_rate_by_form": {f: f"{sum(v)}/{len(v)}" for f, v in forms.items()},
    }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="local", help="a model, or starter (the harness alone)")
    p.add_argument("--calls", type=int, default=24, help="model calls per session")
    p.add_argument("--tasks", default="", help=f"default: {TRAIN_TASKS},{HELD_OUT}")
    p.add_argument("--seeds", default=EVAL_SEEDS, help="held-out seeds of the training tasks")
    p.add_argument("--policy", default="greedy")
    p.add_argument("--limit", type=int, default=0, help="only the first N (task, seed) pairs")
    p.add_argument("--speed-pairs", type=int, default=2, help="pairs also run with 1 worker")
    p.add_argument("--agents", default="solve,search", help="which agents run (solve, search)")
    p.add_argument(
        "--rows",
        type=Path,
        action="append",
        default=[],
        help="a --json output of an earlier run whose rows join the report (repeatable)",
    )
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    home = Home.at(args.home or tempfile.mkdtemp(prefix="search-vs-linear-"))
    store = Store(home.db_path)
    rows: list[dict] = []
    for path in args.rows:
        earlier = json.loads(path.read_text())
        if earlier.get("calls") != args.calls:
            p.error(f"{path} ran {earlier.get('calls')} calls per session, not {args.calls}")
        rows.extend(earlier["rows"])
    agents = set(args.agents.split(","))
    common = {"model": args.model, "max_steps": args.calls}
    search = {"policy": args.policy, **common}
    for i, (task, seed) in enumerate(pairs(args)):
        if "solve" in agents:
            rows.append(run_one(home, store, task, seed, "solve", **common))
            print(json.dumps(rows[-1]), file=sys.stderr)
        if "search" in agents:
            rows.append(run_one(home, store, task, seed, "search", workers=2, **search))
            print(json.dumps(rows[-1]), file=sys.stderr)
        if "search" in agents and i < args.speed_pairs:
            rows.append(run_one(home, store, task, seed, "search", workers=1, **search))
            print(json.dumps(rows[-1]), file=sys.stderr)
    out = {"home": str(home.root), "calls": args.calls, "rows": rows, "report": report(rows)}
    if args.json:
        print(json.dumps(out, default=str))
    else:
        for key, value in out["report"].items():
            print(f"{key}: {value}")
        print(f"sessions kept in {home.root}")


if __name__ == "__main__":
    main()
