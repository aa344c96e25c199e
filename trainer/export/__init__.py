"""Exporting a policy: merge the LoRA, write a GGUF, read its header, check it with llama.cpp."""

from mlagent_tui.core.llm.ggufio import GGUFMeta, read_gguf_meta

from .convert import DEFAULT_PROBE, ExportReport, export_gguf, merged_model
from .verify import Verification, verify_gguf
from .writer import ExportError, gguf_architecture, llama_permute, write_llama_gguf

__all__ = [
    "DEFAULT_PROBE",
    "ExportError",
    "ExportReport",
    "GGUFMeta",
    "Verification",
    "export_gguf",
    "gguf_architecture",
    "llama_permute",
    "merged_model",
    "read_gguf_meta",
    "verify_gguf",
    "write_llama_gguf",
]
