"""The policy behind the core's ChatModel protocol: the core's agents run on it unchanged.

`PolicyChatModel(policy)` wraps a Policy; the adapter knows the policy, never the reverse.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from mlagent_tui.core.llm import Completion, Message, ModelError, TokenCallback

if TYPE_CHECKING:
    from .model import Policy


class _TokenStreamer:
    """transformers' streamer protocol (put/end) turned into text pieces for `on_token`.

    The first `put` is the prompt and is skipped; text is decoded from all completion ids so far
    and only the new, complete suffix is sent (a multi-byte character never arrives split).
    """

    def __init__(self, tokenizer: Any, eos_ids: list[int], on_token: TokenCallback) -> None:
        self.tokenizer = tokenizer
        self.eos_ids = set(eos_ids)
        self.on_token = on_token
        self.ids: list[int] = []
        self.sent = 0
        self.prompt_seen = False
        self.stopped = False

    def put(self, value: Any) -> None:
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        for tok in value.reshape(-1).tolist():
            if self.stopped or tok in self.eos_ids:
                self.stopped = True
                return
            self.ids.append(int(tok))
        self._flush(final=False)

    def _flush(self, final: bool) -> None:
        text = self.tokenizer.decode(self.ids, skip_special_tokens=False)
        if not final and text.endswith("\ufffd"):
            return  # half a character: wait for the rest
        if len(text) > self.sent:
            self.on_token(text[self.sent :])
            self.sent = len(text)

    def end(self) -> None:
        self._flush(final=True)


class PolicyChatModel:
    """ChatModel over a Policy. No grammar support: the core's agents then parse leniently.

    Like the local llama.cpp model, the ids and log-probabilities leave out the final
    end-of-sequence token; log-probabilities are at temperature 1.
    """

    supports_grammar = False

    def __init__(self, policy: Policy, name: str | None = None) -> None:
        self.policy = policy
        self.name = name or f"policy:{policy.base_name}"
        self._lock = threading.Lock()

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        del grammar
        with self._lock:
            start = time.perf_counter()
            policy = self.policy
            prompt = policy.chat_prompt_ids(messages)
            room = policy.max_context - len(prompt)
            if room <= 0:
                raise ModelError(
                    f"prompt is {len(prompt)} tokens but the context holds {policy.max_context}"
                )
            streamer = (
                _TokenStreamer(policy.tokenizer, policy.eos_ids, on_token) if on_token else None
            )
            sample = policy.generate(
                prompt,
                n=1,
                max_new_tokens=min(max_tokens, room),
                temperature=temperature,
                streamer=streamer,
            )[0]
            ids, lps = sample.completion_ids, sample.logprobs
            if sample.finish_reason == "stop":
                ids, lps = ids[:-1], lps[:-1]
            return Completion(
                text=sample.text,
                tokens_in=len(prompt),
                tokens_out=len(ids),
                cost_usd=0.0,
                latency_s=time.perf_counter() - start,
                token_ids=ids,
                logprobs=lps,
                finish_reason=sample.finish_reason,
            )
