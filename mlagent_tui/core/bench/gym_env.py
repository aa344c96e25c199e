"""A Gymnasium environment over our tasks: how outside RL frameworks use them.

`mlagent/<task>` is registered for every bundled task. An episode is a normal session in the
store (replayable like any other): `reset()` starts a fresh one and returns the prompt the agent
would send its model; `step(text)` hands that response to the session, which parses it with the
core parser, executes the action in the sandbox exactly as in `mlagent run`, and asks for the
next response, whose prompt is the next observation. A response that does not parse gets the
agent's usual re-ask prompt as the observation.

The session runs in a thread of its own; its model is a bridge (`ExternalPolicy`) whose
`complete()` hands the prompt to the environment and waits for `step()`'s text, so the session
code is the same one `mlagent run` uses, with its budgets, auto-submit and events.

Spaces: prompts and responses are Unicode text up to what the store keeps whole
(`text_space.UnicodeText`); `step()` refuses a response outside the action space with a
ValueError and the episode goes on. Seeds follow Gymnasium: `reset(seed=s)` prepares the task
with seed s and seeds the env's `np_random`; an unseeded `reset()` draws the task's seed from
`np_random` (seeded by the constructor's `seed`, or at random); `info["seed"]` says which.

Reward: 0 until the episode ends, then `reward_fn(result, task, format_ratio)`; by default the
milestone reward of the trainer (`milestones.milestone_reward_for`), where format_ratio is the
share of responses that parsed. `terminated` when the agent submitted (Final Answer),
`truncated` when a budget (steps, minutes, tokens, cost) ended it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium.utils import seeding

from ..events import clean_text
from ..home import Home
from ..llm import Completion, Message, ModelExhausted, TokenCallback, estimate_tokens
from ..session import Session, SessionConfig, SessionResult
from ..store import Store
from ..tasks import Task, list_tasks, milestone_reward_for
from .text_space import UnicodeText, why_not_text

MODEL_NAME = "gym:external-policy"
MAX_TASK_SEED = 2**31 - 1
RewardFn = Callable[[SessionResult, Task, float], float]


def milestone_reward(result: SessionResult, task: Task, format_ratio: float) -> float:
    """The default reward at the end of an episode: SandMLE's milestones of the final score."""
    score = result.final_score if result.valid else None
    return milestone_reward_for(task.spec, score, format_ratio)


def render_prompt(messages: list[Message]) -> str:
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


class _Closed(Exception):
    pass


class ExternalPolicy:
    """A ChatModel whose responses come from outside: `complete()` waits for `step()`."""

    supports_grammar = False

    def __init__(self, outbox: queue.Queue[tuple[str, Any]]) -> None:
        self.name = MODEL_NAME
        self.outbox = outbox
        self.inbox: queue.Queue[str | type[_Closed]] = queue.Queue()
        self.calls = 0

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        self.outbox.put(("prompt", messages))
        started = time.perf_counter()
        text = self.inbox.get()
        if text is _Closed:
            raise ModelExhausted("the environment was reset or closed")
        assert isinstance(text, str)
        self.calls += 1
        return Completion(
            text=text,
            tokens_in=sum(estimate_tokens(m.content) for m in messages),
            tokens_out=estimate_tokens(text),
            latency_s=time.perf_counter() - started,
            finish_reason="stop",
        )


class MLAgentEnv(gymnasium.Env):
    """One task as an environment; each episode a session (see the module's doc)."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        task: str | None = None,
        task_dir: str | Path | None = None,
        home: str | Path | None = None,
        agent: str = "research",
        max_steps: int | None = None,
        max_minutes: float | None = None,
        sandbox: str = "local",
        seed: int | None = None,
        reward_fn: RewardFn | None = None,
    ) -> None:
        self.home = Home.at(home)
        self.store = Store(self.home.db_path)
        self.base_config = SessionConfig(
            task=task,
            task_dir=str(task_dir) if task_dir else None,
            model=MODEL_NAME,
            agent=agent,  # type: ignore[arg-type]
            sandbox=sandbox,  # type: ignore[arg-type]
            max_steps=max_steps,
            max_minutes=max_minutes,
        )
        if seed is not None:  # unseeded resets draw reproducibly from here on
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        self.reward_fn = reward_fn or milestone_reward
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.session: Session | None = None
        self._events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._policy: ExternalPolicy | None = None
        self._thread: threading.Thread | None = None
        self._done = True

    # -- gymnasium API -------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._end_episode()
        task_seed = seed if seed is not None else int(self.np_random.integers(0, MAX_TASK_SEED))
        config = self.base_config.model_copy(update={"seed": task_seed})
        self._events = queue.Queue()
        self._policy = ExternalPolicy(self._events)
        self.session = Session.create(self.home, self.store, config, model=self._policy)
        self._done = False
        self._thread = threading.Thread(
            target=self._run, args=(self.session,), name=f"gym-{self.session.id}", daemon=True
        )
        self._thread.start()
        obs, _, terminated, truncated, info = self._next()
        return obs, {**info, "seed": task_seed}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done or self._policy is None:
            raise RuntimeError("the episode has ended: call reset() first")
        why = why_not_text(action, self.action_space.min_length, self.action_space.max_length)
        if why is not None:  # refused before the session sees it: the episode goes on
            raise ValueError(f"not in the action space: {why}")
        self._policy.inbox.put(action)
        return self._next()

    def close(self) -> None:
        self._end_episode()
        self.store.close()
        super().close()

    # -- the session's thread ------------------------------------------------------------
    def _run(self, session: Session) -> None:
        try:
            self._events.put(("ended", session.run()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller of step()
            self._events.put(("error", exc))

    def _next(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Wait for the session's next prompt (or its end) and turn it into a step's result."""
        assert self.session is not None
        kind, value = self._events.get()
        if kind == "error":
            self._done = True
            raise RuntimeError(f"session {self.session.id} crashed: {value}") from value
        info: dict[str, Any] = {"session_id": self.session.id, "step": self.session.completed}
        if kind == "prompt":
            best = self.session.best
            info["score"] = best.score if best is not None else None
            return self._observation(render_prompt(value)), 0.0, False, False, info
        result: SessionResult = value
        self._done = True
        if self._thread is not None:
            self._thread.join()
        calls = self._policy.calls if self._policy else 0
        format_ratio = (calls - result.parse_errors) / calls if calls else 0.0
        reward = float(self.reward_fn(result, self.session.task, max(0.0, format_ratio)))
        info.update(
            score=result.final_score if result.valid else None,
            valid=result.valid,
            medal=result.medal,
            status=result.status,
            reason=result.reason,
        )
        score = "none" if info["score"] is None else f"{info['score']:.6g}"
        obs = f"The episode has ended ({result.reason}). Final score: {score}."
        return (
            self._observation(obs),
            reward,
            result.status == "finished",
            result.status == "budget",
            info,
        )

    def _observation(self, text: str) -> str:
        """`text` as a member of the observation space: lone surrogates escaped, the middle of
        an over-long prompt cut (with a note saying how much)."""
        limit = self.observation_space.max_length
        cleaned = clean_text(text, limit=None)
        return cleaned if len(cleaned) <= limit else clean_text(cleaned, limit=limit - 100)

    def _end_episode(self) -> None:
        """Close a running episode: its session ends (stopped) as a normal session would."""
        if self._policy is not None and not self._done:
            self._policy.inbox.put(_Closed)
            while True:
                kind, _ = self._events.get()
                if kind != "prompt":
                    break
                self._policy.inbox.put(_Closed)
        if self._thread is not None:
            self._thread.join()
        self._thread = None
        self._done = True


def register_envs(tasks: list[Task] | None = None) -> list[str]:
    """Register `mlagent/<task>` for each task (the bundled ones by default); returns the ids.

    Make one with `gymnasium.make("mlagent/digits", home=..., max_steps=...)`.
    """
    ids = []
    for task in tasks if tasks is not None else list_tasks():
        env_id = f"mlagent/{task.name}"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point="mlagent_tui.core.bench.gym_env:MLAgentEnv",
                kwargs={"task_dir": str(task.folder)},
                # each episode is a new session (its id in info, timings in outputs)
                nondeterministic=True,
            )
        ids.append(env_id)
    return ids


ENV_IDS = register_envs()
