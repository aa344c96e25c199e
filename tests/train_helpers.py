"""Helpers for trainer tests: fill a store with real sessions driven by replay responses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlagent_tui.core.llm.base import Completion
from mlagent_tui.core.llm.replay import ReplayModel
from mlagent_tui.core.session import Session, SessionConfig

from .agent_helpers import write_replay


def gold_script(task_dir: Path) -> str:
    return (task_dir / "private" / "reference" / "gold.py").read_text()


def solve_text(script: str, plan: str = "go") -> str:
    return f"Plan: {plan}\n```python\n{script.rstrip()}\n```"


class NamedReplay:
    """Replay responses under another model's name, optionally with made-up sampler logprobs
    (stands in for a sampler that records them, e.g. an API model or the trainer's policy)."""

    supports_grammar = False

    def __init__(self, path: Path, name: str, logprobs: bool = False) -> None:
        self.inner = ReplayModel(path)
        self.name = name
        self.logprobs = logprobs

    def complete(self, messages: Any, **kwargs: Any) -> Completion:
        out = self.inner.complete(messages, **kwargs)
        if self.logprobs:
            n = max(1, len(out.text) // 4)
            out = out.model_copy(update={"token_ids": list(range(n)), "logprobs": [-1.0] * n})
        return out


def solve_session(
    tmp_path: Path,
    home: Any,
    store: Any,
    task_dir: Path,
    responses: list[str],
    *,
    name: str | None = None,
    logprobs: bool = False,
    max_steps: int | None = None,
) -> str:
    """Run one solve session on `task_dir` with the responses; return its id."""
    replay = write_replay(tmp_path / f"replay-{len(list(tmp_path.iterdir()))}.jsonl", responses)
    model = NamedReplay(replay, name or f"replay:{replay}", logprobs=logprobs)
    config = SessionConfig(
        task_dir=str(task_dir),
        model=f"replay:{replay}",
        agent="solve",
        max_steps=max_steps or len(responses),
    )
    session = Session.create(home, store, config, model=model)
    session.run()
    return session.id


def store_parents_options(tmp_path: Path, home: Any, store: Any, task_dir: Path, **kw: Any) -> Any:
    """single-step on `task_dir` whose improve prompts all fork the store's valid Drafts: the
    tiny settings the parent and guide tests share (`kw` overrides or adds)."""
    from trainer.recipes import RunOptions

    base: dict[str, Any] = {
        "recipe": "single-step",
        "task_dirs": [str(task_dir)],
        "group_size": 2,
        "max_new_tokens": 32,
        "improve_prob": 1.0,
        "parents": "store",
        "db": str(store.path),
        "home": str(home.root),
        "out": str(tmp_path / "run"),
    }
    return RunOptions(**(base | kw))
