"""What a training run tells the person beyond its numbers: where the policy starts from, what
each phase of an update is doing (a log file gets a line per phase: an update can take minutes
before its own line), and, plainly, when an update could not change the policy and why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from mlagent_tui.core.store import UpdateRecord


def start_text(base_model: str, init: str | None, checkpoint: Path | None) -> str:
    """Which weights the run starts from, in words."""
    if checkpoint is not None:
        return f"its checkpoint {checkpoint} (resumed)"
    if init:
        return f"the latest weights of run {init} (--init)"
    if base_model == "local":
        return "the shipped model (SmolLM2 + the shipped adapter, merged) with a new LoRA adapter"
    bare = "the bare base" if base_model == "smollm2" else "the base"
    return (
        f"{bare} {base_model} with a new LoRA adapter (not the shipped model that `mlagent "
        "--model local` runs: --base-model local starts from it; --init RUN from a run's weights)"
    )


def phase_printer(console: Console, update: int) -> Callable[[str], None]:
    """For a console that is no terminal (no live bar): print each new phase once."""
    last: list[str] = []

    def say(text: str) -> None:
        if not last or last[-1] != text:
            last.append(text)
            console.print(f"update {update}: {text}", highlight=False, markup=False)

    return say


def update_line(update: int, record: UpdateRecord) -> str:
    """One update's line: reward, valid share, loss, all-equal groups, its time."""
    extra = record.extra
    better = (
        f"{extra.get('better_than_parent', 0)} better than their parent, "
        if extra.get("improve_prompts")
        else ""
    )
    return (
        f"update {update}: reward {record.reward_mean:.3f}, valid {record.valid_rate:.0%}, "
        f"loss {record.loss:.4f}, all-equal groups {record.all_equal_groups}/"
        f"{extra.get('groups', 0)}, {better}{record.seconds:.0f} s"
    )


def unchanged_note(
    record: UpdateRecord, anchored: bool = False, imitates: bool = False
) -> str | None:
    """A plain sentence when an update could not change the policy: in every group all answers
    got the same reward, so every advantage (reward minus the group's mean) is zero and the
    policy loss has no gradient. None when some group had a spread, or there was no group, or
    the recipe imitates (sft, distil: every item is learnt whatever its reward)."""
    equal, groups = record.all_equal_groups, record.extra.get("groups", 0)
    if imitates or groups == 0 or equal < groups:
        return None
    reward = f"{record.reward_mean:.3f}" + (", no answer valid" if record.valid_rate == 0 else "")
    anchor = " but the anchor's imitation term" if anchored else ""
    where = "its one group" if groups == 1 else f"each of its {groups} groups"
    return (
        f"this update changed nothing{anchor}: in {where} every answer got the same reward "
        f"({reward}), so every advantage is zero; a larger --group-size or more updates give a "
        "group different answers to learn from"
    )
