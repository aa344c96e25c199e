"""The held-out lists and the commands' defaults agree with what produced the shipped model
(its card), so the plain commands rebuild it and its figures stay held out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainer.defaults import DEMO_LEVELS, DEMO_SEEDS, RECIPE_DEFAULTS, recipe_default
from trainer.heldout import EVAL_SEEDS, HELD_OUT_TASKS, TRAIN_TASKS

from .conftest import ROOT

TRAIN = str(Path(sys.executable).parent / "mlagent-train")


def _card() -> dict:
    """The shipped adapter's card, read from the package (tests run with no adapter in use)."""
    return json.loads((ROOT / "mlagent_tui/adapters/smollm2-135m-mlagent/card.json").read_text())


def test_the_lists_are_the_shipped_models() -> None:
    card = _card()
    assert list(HELD_OUT_TASKS) == card["held_out"]["tasks"]
    assert sorted(card["training_data"]["tasks"]) == sorted(TRAIN_TASKS)
    assert not set(HELD_OUT_TASKS) & set(card["training_data"]["tasks"])
    evals = [int(s) for s in card["seeds"]["eval"].split(",")]
    assert set(evals) <= set(EVAL_SEEDS)
    assert [int(s) for s in card["seeds"]["demos"].split(",")] == list(DEMO_SEEDS["solve"])
    assert [int(s) for s in card["seeds"]["research_demos"].split(",")] == list(
        DEMO_SEEDS["research"]
    )
    trained = {s for seeds in card["training_data"]["tasks"].values() for s in seeds}
    assert not trained & set(EVAL_SEEDS)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import learning_curve  # make adapter's script reads the same lists

    assert learning_curve.HELD_OUT.split(",") == list(HELD_OUT_TASKS)
    assert learning_curve.TRAIN_TASKS.split(",") == list(TRAIN_TASKS)


def test_defaults_are_what_make_adapter_passes() -> None:
    card = _card()["recipe"]
    assert recipe_default("sft", "lora_r", None) == card["lora_r"] == 16
    assert recipe_default("sft", "lr", None) == card["lr"]
    assert recipe_default("sft", "steps", None) == 38
    assert recipe_default("sft", "exclude_tasks", None) == list(HELD_OUT_TASKS)
    assert recipe_default("distil", "lr", None) == card["rl_lr"]
    # distil anchors 2 solve steps beside 2 research steps: what the 4 solve steps alone cost
    assert recipe_default("distil", "anchor", None) == card["rl_anchor"] // 2 == 2
    assert recipe_default("sft", "lr", 5e-4) == 5e-4  # what is passed wins
    assert recipe_default("single-step", "lora_r", None) == 8  # the others keep theirs
    assert DEMO_LEVELS == ("silver",) and "distil" in RECIPE_DEFAULTS


def test_run_with_no_options_says_what_is_missing(tmp_path: Path) -> None:
    done = subprocess.run(
        [TRAIN, "run", "--home", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["updates_done"] == 0 and "mlagent-train demos" in said["message"]


def test_distil_rounds_default_to_what_the_hour_measures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --recipe distil --rounds 1` with nothing else takes benchmarks/distil_hour.py's
    settings (36 updates a round, 2 procedural tasks), so its figures are the plain command's."""
    from typer.testing import CliRunner

    import trainer.recipes.distil as distil
    from trainer.cli import app
    from trainer.recipes.distil_options import DistilOptions

    seen: list = []

    def stop(options: object) -> str:
        seen.append(options)
        return "stopped before training"

    monkeypatch.setattr(distil, "precheck", stop)
    done = CliRunner().invoke(
        app, ["run", "--recipe", "distil", "--rounds", "1", "--home", str(tmp_path), "--json"]
    )
    assert done.exit_code == 0, done.output
    options = seen[0]
    assert options.steps == 36 and options.distil.round_updates == 36
    assert options.distil.procedural == 2
    plain = DistilOptions()
    assert (plain.round_updates, plain.procedural) == (36, 2)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import distil_hour

    assert "RECIPE_DEFAULTS" in Path(distil_hour.__file__).read_text()
