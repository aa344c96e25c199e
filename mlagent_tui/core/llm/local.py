"""Local GGUF models through llama-cpp-python, with grammar, token ids and log-probabilities.

The generation loop is our own (not `create_completion`) for two reasons: the trainer needs the ids
of the sampled tokens and their log-probabilities, which llama-cpp-python only gives through
`logits_all=True` (a full logits copy per token, far too slow); and a GBNF grammar applied to the
whole vocabulary every step halves the speed of a small model. So we sample without the grammar
first and only check that one token against it, masking the whole vocabulary only when the grammar
rejects it (what llama.cpp's own `common_sampler` does).
"""

from __future__ import annotations

import codecs
import ctypes
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from .base import Completion, Message, ModelError, TokenCallback
from .bundled import bundled_model_path
from .lookup import LookupDrafter
from .sampling import Chains, WordKeys
from .stdio import captured_llama_log, quiet_stderr

CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class LocalModel:
    """A GGUF model in this process. Not thread-safe by nature, so calls are serialised."""

    supports_grammar = True
    concurrent = False  # one llama.cpp context: one generation at a time

    def __init__(
        self,
        path: str | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        seed: int = 0,
        name: str | None = None,
        lookup: bool = True,
        prose_penalty: bool = True,
        n_threads_batch: int | None = None,
    ) -> None:
        """`path` None is the bare bundled base; `name` is what sessions record (make_model
        names the default model `local+mlagent-<hash>` when it carries the shipped adapter)."""
        self.path = Path(path).expanduser() if path else bundled_model_path()
        if not self.path.is_file():
            raise ModelError(f"GGUF model file not found: {self.path}")
        self.name = name or ("local" if path is None else f"local:{self.path}")
        self.seed = seed
        self._options = {"n_ctx": n_ctx, "n_threads": n_threads, "lookup": lookup}
        self._options["n_threads_batch"] = n_threads_batch
        self._options["prose_penalty"] = prose_penalty
        self.lookup = lookup  # prompt-lookup drafts (core.llm.lookup): same output, faster
        self.prose_penalty = prose_penalty  # repetition penalty on prose (core.llm.sampling)
        self.guessed = 0  # tokens that came from a kept guess (decoded in a batch)
        self.calls = 0  # each call samples with seed + calls: a group of calls gets varied answers
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}  # GBNF text -> llama_sampler (compiled, pristine)
        self._pieces: dict[int, bytes] = {}
        self._keys: WordKeys | None = None

        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._lib = llama_cpp
        with quiet_stderr() as caught:
            try:
                self.llm = llama_cpp.Llama(
                    model_path=str(self.path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=n_threads_batch,
                    seed=seed,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                detail = caught[0] if caught else ""
                message = f"could not load GGUF model {self.path}: {exc} {detail}".strip()
                raise ModelError(message) from exc
        self.n_ctx = self.llm.n_ctx()
        self.n_vocab = self.llm.n_vocab()
        self._vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        template = self.llm.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE
        eos_id, bos_id = self.llm.token_eos(), self.llm.token_bos()
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=self._piece(eos_id, special=True).decode("utf-8", "replace")
            if eos_id >= 0
            else "",
            bos_token=self._piece(bos_id, special=True).decode("utf-8", "replace")
            if bos_id >= 0
            else "",
            stop_token_ids=[eos_id],
        )
        # Scratch space for masking the whole vocabulary (used only when the grammar says no).
        self._cand = np.zeros(
            self.n_vocab, dtype=np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
        )
        self._ids = np.arange(self.n_vocab, dtype=np.int32)

    def replicas(self, n: int) -> list[LocalModel]:
        """This model and up to n-1 more over the same file, at most one per core: a search's
        workers generate on them at once (the weights are mapped once). The cores are shared:
        each context evaluates prompts on its share of them. Two contexts of two prompt threads
        each, beside the scripts the workers run, oversubscribe two cores and llama.cpp's
        threads then wait on each other (benchmarks/bench_workers.py). `replicas(1)` gives
        this model all the cores again."""
        cores = os.cpu_count() or 1
        count = max(1, min(n, cores))
        share = max(1, cores // count) if count > 1 else self._options["n_threads_batch"]
        options = {**self._options, "n_threads_batch": share}
        others: list[LocalModel] = []
        try:
            for k in range(1, count):
                seed = self.seed + 1009 * k
                others.append(LocalModel(str(self.path), seed=seed, name=self.name, **options))
        except ModelError:  # no room for another context: this one alone keeps every core
            for other in others:
                other.close()
            raise
        self.prompt_threads(share)
        return [self, *others]

    def prompt_threads(self, n: int | None) -> int:
        """Set the threads that evaluate a prompt (None: llama.cpp's default, all cores)."""
        threads = n or max(os.cpu_count() or 1, 1)
        with self._lock:
            self._lib.llama_set_n_threads(self.llm.ctx, self.llm.n_threads, threads)
        return threads

    # ----------------------------------------------------------------- prompt and tokens
    def format_prompt(self, messages: list[Message]) -> str:
        """The exact prompt text (the GGUF's chat template), for the trainer to reproduce."""
        return self._formatter(messages=[m.model_dump() for m in messages]).prompt

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def _piece(self, token: int, special: bool = False) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self._lib.llama_token_to_piece(self._vocab, token, buf, 64, 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._lib.llama_token_to_piece(self._vocab, token, buf, -n, 0, special)
        return buf.raw[:n]

    def _word_keys(self) -> WordKeys:
        """The vocabulary's word keys for the n-gram guard (made once: about 50k pieces)."""
        if self._keys is None:
            self._keys = WordKeys([self._piece(t) for t in range(self.n_vocab)])
        return self._keys

    # ------------------------------------------------------------------------ grammar
    def compile_grammar(self, grammar: str) -> Any:
        """Parse a GBNF grammar with llama.cpp (cached by its text); a bad one is a ModelError.

        `LlamaGrammar.from_string` only stores the text; llama.cpp parses it when a sampler is
        made, and a NULL sampler would crash the process, so this is the real check.
        """
        cached = self._grammars.get(grammar)
        if cached is not None:
            return cached
        with quiet_stderr() as printed, captured_llama_log() as log:
            sampler = self._lib.llama_sampler_init_grammar(
                self._vocab, grammar.encode("utf-8"), b"root"
            )
        if not sampler:
            lines = (printed[0] if printed else "").splitlines() + log
            detail = " ".join(line.strip() for line in lines if line.strip())[:500]
            raise ModelError(f"invalid GBNF grammar: {detail or 'llama.cpp could not parse it'}")
        self._grammars[grammar] = sampler
        return sampler

    def _grammar_allows(self, gsmpl: Any, token: int, logit: float) -> bool:
        lib = self._lib
        one = lib.llama_token_data(token, logit, 0.0)
        arr = lib.llama_token_data_array(ctypes.pointer(one), 1, -1, False)
        lib.llama_sampler_apply(gsmpl, ctypes.byref(arr))
        return not math.isinf(one.logit)

    def _masked_sample(self, chain: Any, gsmpl: Any, logits: np.ndarray) -> int:
        """Sample from the whole vocabulary with the grammar's mask (the slow, rare path)."""
        lib = self._lib
        cand = self._cand
        cand["id"] = self._ids
        cand["logit"] = logits
        cand["p"] = 0.0
        arr = lib.llama_token_data_array(
            cand.ctypes.data_as(lib.llama_token_data_p), self.n_vocab, -1, False
        )
        lib.llama_sampler_apply(gsmpl, ctypes.byref(arr))
        lib.llama_sampler_apply(chain, ctypes.byref(arr))
        if arr.selected < 0:
            raise ModelError("grammar sampling failed: no token selected")
        token = int(arr.data[arr.selected].id)
        # with no finite logit left (the n-gram guard banned all the grammar allows) llama.cpp
        # still selects a token; accepting one the grammar refuses aborts the process
        if not self._grammar_allows(gsmpl, token, 0.0):
            raise ModelError("grammar sampling failed: the grammar allows no token left")
        return token

    def _sample(
        self, chain: Any, gsmpl: Any, logits: np.ndarray, row: int, banned: dict[int, float]
    ) -> int:
        """A token for batch row `row`, under the grammar if any, without the `banned` ones
        (their logits are -inf now, put back here) unless the grammar allows nothing else."""
        lib = self._lib
        try:
            token = lib.llama_sampler_sample(chain, self.llm.ctx, row)
            if gsmpl is not None and not self._grammar_allows(gsmpl, token, float(logits[token])):
                try:
                    token = self._masked_sample(chain, gsmpl, logits)
                except ModelError:
                    if not banned:
                        raise
                    token = -1
                if token in banned or token < 0:  # the grammar wants a banned token: let it
                    Chains.unban(logits, banned)
                    banned = {}
                    token = self._masked_sample(chain, gsmpl, logits)
        finally:
            Chains.unban(logits, banned)
        return int(token)

    # ------------------------------------------------------------------------- calls
    def _eval_prompt(self, tokens: list[int]) -> None:
        """Evaluate the prompt, reusing the cached prefix of the previous call (agent steps share
        a long system prompt)."""
        llm = self.llm
        keep = 0
        if llm.n_tokens > 0 and not (llm._is_recurrent or llm._is_hybrid):
            cached = llm.input_ids[: llm.n_tokens]
            limit = min(len(cached), len(tokens) - 1)  # at least one token to eval, for logits
            while keep < limit and cached[keep] == tokens[keep]:
                keep += 1
        if keep == 0:
            llm.reset()
        else:
            llm.n_tokens = keep  # eval() drops the kv cache past n_tokens
        llm.eval(tokens[keep:])

    def _decode(self, tokens: list[int]) -> None:
        """Evaluate `tokens` after the cached ones, with logits at every position (row i of the
        batch predicts the token after tokens[i]); drops whatever the cache held past n_tokens."""
        llm = self.llm
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        n_past = llm.n_tokens
        llm._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past : n_past + len(tokens)] = tokens
        llm.n_tokens += len(tokens)

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        with self._lock:
            prompt = self.tokenize(self.format_prompt(messages))
            return self._generate(prompt, grammar, max_tokens, temperature, on_token)

    def complete_ids(
        self, prompt: list[int], *, max_tokens: int, temperature: float, plain: bool = True
    ) -> Completion:
        """Continue token ids already in the model's format (a trainer's exact prompt), sampling
        from the model's plain distribution unless `plain` is False."""
        with self._lock:
            return self._generate(list(prompt), None, max_tokens, temperature, None, plain)

    def _generate(
        self,
        prompt: list[int],
        grammar: str | None,
        max_tokens: int,
        temperature: float,
        on_token: TokenCallback | None,
        plain: bool = False,
    ) -> Completion:
        lib, llm = self._lib, self.llm
        start = time.perf_counter()
        gsmpl = None
        if grammar:
            gsmpl = lib.llama_sampler_clone(self.compile_grammar(grammar))
        room = self.n_ctx - len(prompt)
        if room <= 0:
            raise ModelError(
                f"prompt is {len(prompt)} tokens but the context holds {self.n_ctx} "
                f"(raise n_ctx or shorten the history)"
            )
        budget = min(max_tokens, room)
        penalise = self.prose_penalty and not plain
        keys = self._word_keys() if penalise else None
        chains = Chains(lib, temperature, self.seed + self.calls, plain, penalise, keys)
        self.calls += 1
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        token_ids: list[int] = []
        logprobs: list[float] = []
        parts: list[str] = []
        finish, stop_token, stop_logprob = "length", None, None
        drafter = LookupDrafter(prompt) if self.lookup else None
        try:
            self._eval_prompt(prompt)
            ctx = llm.ctx
            rows, drafts = [-1], []  # the batch rows to sample from; the guesses they check
            while len(token_ids) < budget:
                token, kept, before = -1, 0, len(token_ids)
                for row in rows:
                    logits = np.ctypeslib.as_array(
                        lib.llama_get_logits_ith(ctx, row), shape=(self.n_vocab,)
                    )
                    chain = chains.pick()  # penalised while the text is prose
                    prose = chains.tracker.prose
                    token = self._sample(chain, gsmpl, logits, row, chains.ban(logits))
                    # log p(token) under the raw distribution (temperature 1, no grammar mask):
                    # what the trainer's policy computes for the same ids.
                    top = float(logits.max())
                    logprob = float(logits[token]) - top - math.log(np.exp(logits - top).sum())
                    if lib.llama_vocab_is_eog(self._vocab, token):
                        finish, stop_token, stop_logprob = "stop", int(token), logprob
                        break
                    if gsmpl is not None:
                        lib.llama_sampler_accept(gsmpl, token)
                    token_ids.append(int(token))
                    chains.accept(int(token), prose)
                    logprobs.append(logprob)
                    piece = self._pieces.get(token)
                    if piece is None:
                        piece = self._pieces[token] = self._piece(token)
                    text = decoder.decode(piece)
                    if text:
                        chains.tracker.feed(text)
                        parts.append(text)
                        if on_token is not None:
                            on_token(text)
                    if len(token_ids) >= budget or kept >= len(drafts) or token != drafts[kept]:
                        break
                    kept += 1  # the guess was what the model sampled: its row is already done
                self.guessed += kept
                if drafter is not None:
                    drafter.verdict(len(drafts), kept)
                    drafter.extend(token_ids[before:])
                # The kv cache holds the kept guesses; the rest of the batch is dropped.
                llm.n_tokens -= len(drafts) - kept
                if finish == "stop" or len(token_ids) >= budget:
                    break
                room_left = budget - len(token_ids) - 1
                drafts = drafter.propose(room_left) if drafter is not None else []
                self._decode([token, *drafts])
                rows = list(range(len(drafts) + 1))
        finally:
            chains.free()
            if gsmpl is not None:
                lib.llama_sampler_free(gsmpl)
        tail = decoder.decode(b"", final=True)
        if tail:
            parts.append(tail)
            if on_token is not None:
                on_token(tail)
        return Completion(
            text="".join(parts),
            tokens_in=len(prompt),
            tokens_out=len(token_ids),
            cost_usd=0.0,
            latency_s=time.perf_counter() - start,
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason=finish,
            stop_token_id=stop_token,
            stop_logprob=stop_logprob,
        )

    def close(self) -> None:
        for sampler in self._grammars.values():
            self._lib.llama_sampler_free(sampler)
        self._grammars.clear()
        self.llm.close()
