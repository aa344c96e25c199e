"""Distillation from scratch within an hour, then its held-out figures beside the shipped model's.

Every phase is the product's own command, printed before it runs:

    demos     mlagent-train demos                      reference solutions (the anchor)
    distil    mlagent-train run --recipe distil --rounds 1 --steps 36 --procedural 2 --minutes M
              (its sweep of every starter's one-setting changes at 3 seeds first: ~10 min; one
              search round, ~12 min, then 36 updates over the sweep's answers and the search's
              steps on the tasks the sweep taught nothing for)
              (M: what is left of `--budget` minutes after the demonstrations, less 4 for export;
              on a 2-core CPU about 33 of the 36 updates fit, and the budget stops the run there)
    export    mlagent-train export --quant f16         the distilled LoRA merged into a GGUF
              (f16: the default q8_0 differs from torch by up to 5 logits on a trained adapter,
              enough to take back the choice it learned; f16 by 0.09)
    solve     mlagent-train eval on the three held-out tasks (seeds 100-102), --against local
    paired    mlagent-train eval on seeds 102-109 of the training tasks, 1 sample each
              (48 pairs), --max-steps 2, --against local: better / worse / same, sign test
              (a seed's second sample gave the same reward in 23 of 24 pairs: decoding is
              near-greedy, so 4 seeds x 2 samples were 24 measurements counted twice)
    search    mlagent-train eval --agent search --max-steps 24 on the held-out tasks (100-102,
              9 sessions as the solve eval: at 6, one session moved the rate by 17 points)
    research  mlagent-train eval --agent research on breast-cancer (seeds 100-103), 6 steps
    research15  the same at its default 15 steps (seeds 104-107)

Evaluation seeds and held-out tasks are refused by every training phase (trainer/heldout.py) and
each eval is held to the run's own training record (`--trained-on`).

    .venv/bin/python benchmarks/distil_hour.py --work /tmp/d60 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from curve_ship import machine  # noqa: E402
from learning_curve import BIN, HELD_OUT, TRAIN_TASKS, run  # noqa: E402

from trainer.defaults import RECIPE_DEFAULTS  # noqa: E402
from trainer.recipes.distil_record import RECORD_FILE  # noqa: E402

TRAIN = str(BIN / "mlagent-train")


def train(
    work: Path, budget_min: float, rounds: int, updates: int, procedural: int
) -> dict[str, Any]:
    """demos -> distil -> export inside `budget_min` minutes of wall time (what it took, too)."""
    home, out, log = work / "home", work / "run", work / "train.log"
    started = time.monotonic()
    run([TRAIN, "demos", "--home", str(home), "--json"], log)
    left = int((budget_min * 60 - (time.monotonic() - started)) / 60) - 4
    if left < 5:
        raise SystemExit(f"only {left} minute(s) left for distil after the demonstrations")
    opts = ["--rounds", str(rounds), "--steps", str(updates), "--procedural", str(procedural)]
    opts += ["--minutes", str(left)]
    result = run(
        [TRAIN, "run", "--recipe", "distil", *opts, "--home", str(home), "--out", str(out)]
        + ["--json"],
        log,
    )
    gguf = ["--to", str(work / "distil.gguf"), "--quant", "f16"]
    run([TRAIN, "export", "--run", str(out), *gguf, "--json"], log)
    return {
        "minutes": round((time.monotonic() - started) / 60, 1),
        "updates": result.get("updates_done"),
        "notes": result.get("notes", []),
        "rounds": json.loads((out / RECORD_FILE).read_text())["rounds"],
    }


EVALS: dict[str, list[str]] = {
    "solve": ["--tasks", HELD_OUT, "--seeds", "100,101,102", "--against", "local"],
    "paired": ["--tasks", TRAIN_TASKS, "--seeds", "102,103,104,105,106,107,108,109"]
    + ["--max-steps", "2", "--against", "local"],
    "search": ["--agent", "search", "--max-steps", "24", "--tasks", HELD_OUT]
    + ["--seeds", "100,101,102"],
    "research": ["--agent", "research", "--tasks", "breast-cancer", "--seeds", "100,101,102,103"]
    + ["--max-steps", "6"],
    # at the research agent's default 15 steps its plans repeat more: measured apart
    "research15": ["--agent", "research", "--tasks", "breast-cancer"]
    + ["--seeds", "104,105,106,107"],
}


def figures(report: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "samples",
        "valid_rate",
        "beats_baseline_rate",
        "beats_starter_rate",
        "medal_rate",
        "mean_reward",
    )
    row = {k: report.get(k) for k in keys} | {"intervals": report.get("intervals")}
    if report.get("repetition") is not None:
        row["repetition"] = report["repetition"]
    against = report.get("against")
    if against:
        row["against"] = {k: against.get(k) for k in (*keys[1:], "paired")}
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, required=True, help="a new folder for everything")
    p.add_argument("--budget", type=float, default=60.0, help="minutes for demos+distil+export")
    # one search round: a second one's 12 minutes buy ~11 more passes over the sweep's choices
    p.add_argument("--rounds", type=int, default=1)
    distil = RECIPE_DEFAULTS["distil"]
    p.add_argument("--updates", type=int, default=distil["round_updates"], help="--steps")
    p.add_argument("--procedural", type=int, default=distil["procedural"])
    p.add_argument("--evals", default=",".join(EVALS), help="which evaluations, in order")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    gguf = a.work / "distil.gguf"
    out: dict[str, Any] = {"machine": machine()}
    if gguf.exists():
        print(f"reusing {gguf} (a finished training in this folder)", file=sys.stderr)
    else:
        out["train"] = train(a.work, a.budget, a.rounds, a.updates, a.procedural)
    model = ["--model", f"local:{gguf}", "--trained-on", str(a.work / "run")]
    for name in a.evals.split(","):
        home = ["--home", str(a.work / f"eval-{name}")]
        report = run([TRAIN, "eval", *model, *EVALS[name], *home, "--json"], a.work / "eval.log")
        out[name] = figures(report)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        for name, row in out.items():
            print(f"{name}: {json.dumps(row)}")


if __name__ == "__main__":
    main()
