"""Degenerate repetition of the local model's research steps, with and without the prose penalty.

Runs research sessions of `--model` (default: the shipped local model) on held-out seeds of a
task, each `--steps` model calls long, once with the repetition penalty on prose off and once
on (mlagent_tui.core.llm.sampling), same seeds and sampling seeds, and reports the share of
research steps whose plan or thought repeats one 3-word phrase more than 3 times
(trainer.repetition), the steps' mean output tokens and seconds. Sessions are real (sandbox,
grammar, temperature 0.2 as `mlagent run` uses) and go to a temporary home.

    .venv/bin/python benchmarks/bench_repetition.py --seeds 100,101,102 --steps 1 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))

from mlagent_tui.core.home import Home  # noqa: E402
from mlagent_tui.core.llm import make_model  # noqa: E402
from mlagent_tui.core.store import Store  # noqa: E402
from mlagent_tui.core.tasks import find_task  # noqa: E402
from trainer.repetition import session_repetition  # noqa: E402
from trainer.rollout import new_session, run_session  # noqa: E402


def measure(model: Any, task: Any, seeds: list[int], steps: int, penalty: bool) -> dict[str, Any]:
    model.prose_penalty = penalty
    root = Path(tempfile.mkdtemp(prefix="mlagent-rep-"))
    home = Home.at(root)
    store = Store(home.db_path)
    ids, started = [], time.monotonic()
    model.calls = 0  # the same sampling seeds in both settings (each call: seed + calls)
    for seed in seeds:
        out = run_session(
            lambda seed=seed: new_session(
                home, store, task, model, agent="research", seed=seed, max_steps=steps
            ),
            store,
            task,
            instrument="none",
        )
        ids.append(out.session_id)
    calls = [e.payload for sid in ids for e in store.events(sid, kinds=["llm_call"])]
    rep = session_repetition(store, ids)
    return {
        "prose_penalty": penalty,
        **rep.model_dump(),
        "calls": len(calls),
        "mean_tokens_out": round(sum(c.tokens_out for c in calls) / max(len(calls), 1), 1),
        "seconds": round(time.monotonic() - started, 1),
        "sessions": ids,
        "home": str(root),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="local")
    p.add_argument("--task", default="breast-cancer")
    p.add_argument("--seeds", default="100,101,102")
    p.add_argument("--steps", type=int, default=1, help="model calls per session")
    p.add_argument("--penalty", choices=("both", "off", "on"), default="both")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    model = make_model(a.model)
    task = find_task(a.task)
    seeds = [int(s) for s in a.seeds.split(",")]
    settings = {"both": (False, True), "off": (False,), "on": (True,)}[a.penalty]
    rows = [measure(model, task, seeds, a.steps, penalty) for penalty in settings]
    if a.json:
        print(json.dumps({"model": model.name, "task": a.task, "seeds": seeds, "rows": rows}))
        return
    for r in rows:
        print(
            f"prose penalty {'on ' if r['prose_penalty'] else 'off'}: {r['repetitive']} of "
            f"{r['steps']} research steps repeat a phrase ({r['share']:.0%}; {r['examples']}); "
            f"{r['mean_tokens_out']} tokens per call, {r['seconds']} s"
        )


if __name__ == "__main__":
    main()
