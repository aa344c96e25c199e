"""A `--model` string that cannot work is refused up front, in one line, before any session row:
a typo, a missing key or key variable, a missing or wrong file, a cost budget with no price."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from mlagent_tui.core.llm import ModelError, check_model

from .conftest import ROOT, TINY
from .test_llm import FakeOpenAI


@pytest.fixture
def listening() -> Iterator[str]:
    """The URL of an OpenAI-compatible server that answers (the up-front check connects, then
    asks for one token)."""
    server = FakeOpenAI()
    server.thread.start()
    yield server.base
    server.server.shutdown()
    server.server.server_close()


def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # closed once we return


def refusal(spec: str, **options: object) -> str:
    with pytest.raises(ModelError) as info:
        check_model(spec, **options)
    message = str(info.value)
    assert "\n" not in message  # one line
    return message


def test_a_typo_is_unknown_with_a_suggestion() -> None:
    message = refusal("locl")
    assert "unknown model 'locl'" in message and "did you mean 'local'?" in message
    assert "openai/gpt-4o-mini" in message  # says what a valid id looks like


def test_a_missing_key_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert "set OPENAI_API_KEY" in refusal("openai/gpt-4o-mini")
    monkeypatch.delenv("MLAGENT_NO_SUCH_KEY", raising=False)
    message = refusal("openai/gpt-4o-mini", api_key_env="MLAGENT_NO_SUCH_KEY")
    assert "MLAGENT_NO_SUCH_KEY" in message and "not set" in message
    monkeypatch.setenv("MLAGENT_NO_SUCH_KEY", "sk-anything")
    check_model("openai/gpt-4o-mini", api_key_env="MLAGENT_NO_SUCH_KEY")


def test_a_server_of_ones_own_needs_no_key_but_must_be_there(
    monkeypatch: pytest.MonkeyPatch, listening: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    check_model("openai/smollm2", api_base=listening)
    check_model("ollama/llama3")  # litellm's default base; no key
    url = closed_url()
    assert f"cannot reach {url}" in refusal("openai/smollm2", api_base=url)
    assert "not an http(s) URL" in refusal("openai/smollm2", api_base="127.0.0.1:8000")


def test_local_and_replay_files_must_be_there(tmp_path: Path) -> None:
    assert "no GGUF file at" in refusal(f"local:{tmp_path / 'missing.gguf'}")
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    assert "is not a GGUF file" in refusal(f"local:{text}")
    assert "replay file not found" in refusal(f"replay:{tmp_path / 'missing.jsonl'}")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert "has no responses" in refusal(f"replay:{empty}")
    check_model("local")
    check_model("smollm2")


def test_a_cost_budget_needs_a_price(monkeypatch: pytest.MonkeyPatch, listening: str) -> None:
    own = {"api_base": listening}
    message = refusal("openai/smollm2", max_cost=1.0, **own)
    assert "--max-cost" in message and "--price-in" in message
    check_model("openai/smollm2", max_cost=1.0, price_in=0.5, price_out=1.5, **own)
    check_model("openai/smollm2", **own)  # no budget: an unknown price is only reported
    assert "give both prices" in refusal("openai/smollm2", price_in=0.5, **own)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-anything")
    check_model("openai/gpt-4o-mini", max_cost=1.0)  # litellm knows its price


def test_a_session_never_stores_a_key() -> None:
    from mlagent_tui.core.session import SessionConfig

    with pytest.raises(ValueError, match="--api-key-env"):
        SessionConfig(model="openai/gpt-4o-mini", model_options={"api_key": "sk-secret"})


# --------------------------------------------------------------------------- the command
def _sessions(home: Path) -> int:
    if not (home / "mlagent.db").exists():
        return 0
    with closing(sqlite3.connect(home / "mlagent.db")) as db:
        return int(db.execute("SELECT count(*) FROM sessions").fetchone()[0])


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("locl", "did you mean 'local'?"),
        ("openai/gpt-4o-mini", "set OPENAI_API_KEY"),
        ("local:/no/such/model.gguf", "no GGUF file at /no/such/model.gguf"),
    ],
)
def test_run_refuses_a_bad_model_before_any_session(tmp_path: Path, model: str, words: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "run", "--task-dir", str(TINY), "--model", model],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home)},
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode != 0 and words in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and _sessions(home) == 0
