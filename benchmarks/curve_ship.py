"""What `make adapter` ships, and when: the floors a chosen run's held-out figures must reach,
its gain over the shipped model on seeds no choice was made on, and the shipped card."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path
from typing import Any

# The figures a shipped adapter must reach on held-out data: (evaluation, field, least)
FLOORS = (
    ("seeds_of_training_tasks", "valid_rate", 0.7),
    ("research_default_task", "valid_rate", 0.3),
    ("held_out_tasks", "valid_rate", 0.4),
    ("held_out_tasks", "beats_baseline_rate", 0.2),
)


def shortfalls(figures: dict[str, dict[str, Any]]) -> list[str]:
    """Which of the floors the chosen model's held-out figures miss (none: it may ship)."""
    return [
        f"{what} {field} {got} < {least}"
        for what, field, least in FLOORS
        if (got := figures.get(what, {}).get(field)) is None or got < least
    ]


def gain_shortfalls(confirm: dict[str, Any], most_p: float) -> list[str]:
    """Why the chosen run's gain over the shipped model does not hold on the confirmation
    seeds (none: it holds): mean reward higher with the sign test's p below `most_p`, and
    validity not lower."""
    against = confirm.get("against") or {}
    pair = against.get("paired") or {}
    diff, p_value = pair.get("mean_difference"), pair.get("p_value", 1.0)
    out = []
    if diff is None or diff <= 0 or p_value >= most_p:
        out.append(
            f"no gain over {against.get('model', 'the shipped model')}: mean reward difference "
            f"{diff} over {pair.get('sessions', 0)} paired sessions (sign test p = {p_value}, "
            f"needs < {most_p})"
        )
    mine, theirs = confirm.get("valid_rate"), against.get("valid_rate")
    if mine is None or theirs is None or mine < theirs:
        out.append(f"valid rate {mine} below the shipped model's {theirs}")
    return out


def ship(work: Path, report: dict[str, Any], a: argparse.Namespace) -> dict[str, Any]:
    """Ship the chosen run (sft, or sft + RL where RL raised the held-out-seed mean reward)."""
    from trainer.provenance import TrainingData
    from trainer.ship import ship_adapter

    chosen = report["chosen"]
    card = {
        "training_data": TrainingData.load(work / chosen).model_dump(),
        "recipe": {
            "chosen_run": chosen,
            "demos": report["demos"],
            "sft": report["sft"],
            "rl": report["rl"],
            "lora_r": a.lora_r,
            "lr": a.lr,
            "rl_steps": a.rl_steps,
            "rl_lr": a.rl_lr,
            "rl_improve_prob": a.rl_improve_prob,
            "rl_inner_steps": a.rl_inner_steps,
            "rl_temperature": a.rl_temperature,
            "rl_guide": a.rl_guide,
            "rl_anchor": a.rl_anchor,
        },
        "seeds": {
            "demos": a.demo_seeds,
            "research_demos": a.research_seeds,
            "rl": a.rl_seeds,
            "eval": a.eval_seeds,
            "confirm": a.confirm_seeds,
        },
        "confirm_against_shipped": report.get("confirm"),
        "time": {"phases_s": report["phases"], "machine": machine()},
        "held_out": {"tasks": report["held_out_tasks"], "figures": report["eval"]},
        "command": "make adapter  (" + " ".join(sys.argv) + ")",
    }
    dest = ship_adapter(work / chosen, card)
    return {"run": chosen, "folder": str(dest)}


def machine() -> str:
    """What the times were measured on: the same loop took 54.6 minutes on one of this
    project's 2-core VMs and 29.5 on another."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text(errors="replace").splitlines() if info.is_file() else []
    name = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "")
    return f"{os.cpu_count()}-core CPU ({name or platform.processor() or 'unknown'}), no GPU"
