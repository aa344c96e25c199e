"""The trainable policy: a base LM with LoRA, its batches, its base model, its ChatModel face."""

from .batch import Sample, batch_logprobs, build_batch, token_logprobs
from .chat import PolicyChatModel
from .load import BaseSource, choose_backend, resolve_base
from .model import Policy, PolicyConfig, load_policy

__all__ = [
    "BaseSource",
    "Policy",
    "PolicyChatModel",
    "PolicyConfig",
    "Sample",
    "batch_logprobs",
    "build_batch",
    "choose_backend",
    "load_policy",
    "resolve_base",
    "token_logprobs",
]
