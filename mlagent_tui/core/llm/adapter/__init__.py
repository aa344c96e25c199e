"""The project's LoRA adapter for the bundled SmolLM2: its files, its name, its cached merge.

`--model local` runs the bundled base plus this adapter when one is shipped (merged once into a
cached GGUF with numpy; no torch), `--model smollm2` the bare base. The merge's names load on
first use (they pull in gguf-py); the file checks and model names are cheap to import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...lazy import lazy_exports
from ..base import ModelError
from .files import (
    ADAPTER_ENV,
    ADAPTER_NAME,
    BARE_NAME,
    CARD_FILE,
    CONFIG_FILE,
    MAX_ADAPTER_BYTES,
    README_FILE,
    WEIGHTS_FILE,
    Adapter,
    AdapterCard,
    AdapterConfig,
    AdapterError,
    TrainingData,
    adapter_dir,
    base_identity,
    load_adapter,
    package_adapter_dir,
    read_card,
    read_config,
    recorded_identity,
    shipped_name,
)
from .tensors import SafetensorsError, read_safetensors, write_safetensors

if TYPE_CHECKING:
    from .merge import cache_root, lora_plan, merge_adapter, merged_gguf, merged_path

__all__ = [
    "ADAPTER_ENV",
    "ADAPTER_NAME",
    "BARE_NAME",
    "CARD_FILE",
    "CONFIG_FILE",
    "MAX_ADAPTER_BYTES",
    "README_FILE",
    "WEIGHTS_FILE",
    "Adapter",
    "AdapterCard",
    "AdapterConfig",
    "AdapterError",
    "SafetensorsError",
    "TrainingData",
    "adapter_dir",
    "base_identity",
    "cache_root",
    "default_local_model",
    "load_adapter",
    "lora_plan",
    "merge_adapter",
    "merged_gguf",
    "merged_path",
    "package_adapter_dir",
    "read_card",
    "read_config",
    "read_safetensors",
    "recorded_identity",
    "shipped_name",
    "write_safetensors",
]

_MERGE = ("cache_root", "lora_plan", "merge_adapter", "merged_gguf", "merged_path")
__getattr__ = lazy_exports(__name__, {name: "merge" for name in _MERGE})


def default_local_model(bare: bool = False) -> tuple[Path, str]:
    """The GGUF and the recorded name of `--model local` (`bare`: of `--model smollm2`)."""
    from ..local import bundled_model_path

    if bare:
        return bundled_model_path(), BARE_NAME
    adapter = load_adapter()
    if adapter is None:
        return bundled_model_path(), "local"
    from .merge import cache_root, merged_gguf

    try:
        return merged_gguf(adapter), adapter.name
    except OSError as exc:  # a read-only or full cache: say where, and the ways around it
        raise ModelError(
            f"could not cache the merged local model under {cache_root()}: {exc} (set "
            "MLAGENT_CACHE_DIR to a writable folder, or `--model smollm2` runs the bare base)"
        ) from exc
