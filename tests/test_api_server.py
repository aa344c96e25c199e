"""The API path (litellm) against a real OpenAI-compatible server, not a mock: llama.cpp's own
server (`python -m llama_cpp.server`, the `server` extra of llama-cpp-python) serving the bundled
SmolLM2 GGUF on 127.0.0.1, started once for this module and stopped at its end."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from mlagent_tui.core.llm import Message, ModelError, bundled_model_path, make_model
from mlagent_tui.core.store import Store
from mlagent_tui.tui.view import SessionView

from .conftest import ROOT, TINY

KEY_VAR = "MLAGENT_TEST_SERVER_KEY"
KEY = "sk-local-test-7d1e0c"  # what the server demands; a session must never store it
HELLO = [Message(role="user", content="Say hello in three words.")]
START_TIMEOUT_S = 180


@dataclass
class Server:
    base: str
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(base: str) -> bool:
    request = urllib.request.Request(f"{base}/models", headers={"Authorization": f"Bearer {KEY}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(bundled_model_path()),
        "--model_alias",
        "smollm2",
        "--n_ctx",
        "4096",  # the solve agent asks for up to 2048 tokens after its prompt
        "--n_threads",
        "1",  # two OpenMP threads on a shared two-core box spin against each other
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--api_key",
        KEY,
        "--verbose",
        "False",
    ]
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT)
    base = f"http://127.0.0.1:{port}/v1"
    os.environ[KEY_VAR] = KEY
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ready(base):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield Server(base=base, log=log)
    finally:
        os.environ.pop(KEY_VAR, None)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def served(server: Server, **options: object):  # noqa: ANN201
    options = {"api_key_env": KEY_VAR, "max_retries": 0, **options}
    return make_model("openai/smollm2", api_base=server.base, **options)


# ------------------------------------------------------------------------------ the model
def test_answer_with_reported_usage_and_unknown_cost(server: Server) -> None:
    c = served(server).complete(HELLO, max_tokens=8, temperature=0.0)
    assert c.tokens_in > 5 and 0 < c.tokens_out <= 8
    assert not c.tokens_estimated  # a plain answer carries the server's own usage
    assert not c.cost_known and c.cost_usd == 0.0
    assert c.note and "cost unknown" in c.note and "--price-in" in c.note


def test_streamed_counts_are_marked_estimated(server: Server) -> None:
    seen: list[str] = []
    c = served(server).complete(HELLO, max_tokens=8, temperature=0.0, on_token=seen.append)
    assert seen and "".join(seen) == c.text
    # llama.cpp's server sends no usage in a stream: litellm counts it with its own tokenizer
    assert c.tokens_estimated and c.tokens_out > 0
    assert c.note and "estimated" in c.note


def test_prices_per_million_tokens_give_the_cost(server: Server) -> None:
    c = served(server, price_in=2.0, price_out=4.0).complete(HELLO, max_tokens=8)
    assert c.cost_known
    assert c.cost_usd == pytest.approx((c.tokens_in * 2.0 + c.tokens_out * 4.0) / 1e6)


def test_wrong_key_names_its_variable(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLAGENT_TEST_WRONG_KEY", "sk-wrong")
    with pytest.raises(ModelError, match="authentication failed.*MLAGENT_TEST_WRONG_KEY") as info:
        served(server, api_key_env="MLAGENT_TEST_WRONG_KEY").complete(HELLO, max_tokens=4)
    assert not info.value.retryable


def test_unreachable_server_is_named_by_its_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    model = make_model("openai/smollm2", api_base=url, api_key="none", max_retries=0)
    for on_token in (None, lambda text: None):
        with pytest.raises(ModelError) as info:
            model.complete(HELLO, max_tokens=4, on_token=on_token)
        message = str(info.value)
        assert f"cannot reach {url}" in message and "Connection refused" in message
        assert "InternalServerError" not in message and info.value.retryable


# -------------------------------------------------------------------------- the sessions
def mlagent(home: Path, *args: str, env: dict[str, str] | None = None):  # noqa: ANN201
    full = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "mlagent_tui", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=600,
        cwd=ROOT,
    )


def api_run(server: Server, home: Path, *extra: str, steps: int = 1):  # noqa: ANN201
    return mlagent(
        home,
        "run",
        "--task-dir",
        str(TINY),
        "--agent",
        "solve",
        "--model",
        "openai/smollm2",
        "--api-base",
        server.base,
        "--api-key-env",
        KEY_VAR,
        "--max-steps",
        str(steps),
        "--json",
        "--no-starter",  # step 1 is the model's answer: these tests are about its calls
        *extra,
    )


def query(home: Path, sql: str, *args: str) -> list[tuple]:
    """A fresh connection per question, closed at once (the commands write in between)."""
    with closing(sqlite3.connect(home / "mlagent.db")) as db:
        return db.execute(sql, args).fetchall()


def payloads(home: Path, session_id: str, kind: str) -> list[dict]:
    rows = query(
        home, "SELECT payload FROM events WHERE session_id = ? AND kind = ?", session_id, kind
    )
    return [json.loads(row[0]) for row in rows]


def llm_calls(home: Path, session_id: str) -> list[dict]:
    return payloads(home, session_id, "llm_call")


def session_count(home: Path) -> int:
    if not (home / "mlagent.db").exists():
        return 0
    return int(query(home, "SELECT count(*) FROM sessions")[0][0])


def test_run_resume_and_fork_through_the_server(server: Server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = api_run(server, home)
    result = json.loads(proc.stdout)
    sid = result["session_id"]
    assert result["tokens_in"] > 0 and result["cost_known"] is False, proc.stderr
    assert "authentication" not in result["reason"] and "cannot reach" not in result["reason"]
    calls = llm_calls(home, sid)
    assert calls and all(c["cost_known"] is False for c in calls)
    options = payloads(home, sid, "session_started")[0]["config"]["model_options"]
    assert options == {"api_base": server.base, "api_key_env": KEY_VAR}
    stored = b"".join(p.read_bytes() for p in home.glob("mlagent.db*"))
    assert KEY.encode() not in stored  # the name of the variable, never the key
    store = Store(home / "mlagent.db")
    try:  # the TUI's status line (live and replay read the same events)
        line = SessionView().apply_all(store.events(sid)).status_line()
    finally:
        store.close()
    assert "cost unknown" in line and "$" not in line

    # resume and fork find the same server with the same key variable
    resumed = json.loads(mlagent(home, "resume", sid, "--max-steps", "1", "--json").stdout)
    assert len(llm_calls(home, sid)) > len(calls), resumed
    forked = json.loads(
        mlagent(home, "fork", sid, "--step", "1", "--max-steps", "1", "--json").stdout
    )
    assert forked["session_id"] != sid and llm_calls(home, forked["session_id"])
    assert "authentication" not in forked["reason"]

    # without the key's variable, resuming says so in one line and records nothing
    before = len(llm_calls(home, sid))
    gone = mlagent(home, "resume", sid, "--max-steps", "1", env={KEY_VAR: ""})
    assert gone.returncode != 0 and KEY_VAR in gone.stderr
    assert len(gone.stderr.strip().splitlines()) == 1 and len(llm_calls(home, sid)) == before


def test_max_cost_needs_a_price(server: Server, tmp_path: Path) -> None:
    """Refused before any session for an unpriced model; the prices make it a real budget (the
    cost they give is checked above; one model call here, the budget stops the run at once)."""
    home = tmp_path / "home"
    refused = api_run(server, home, "--max-cost", "0.5")
    assert refused.returncode != 0 and "--price-in" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and session_count(home) == 0

    prices = ("--price-in", "2", "--price-out", "4")
    priced = api_run(server, home, "--max-cost", "1e-9", *prices, steps=3)
    result = json.loads(priced.stdout)
    calls = llm_calls(home, result["session_id"])
    assert result["cost_known"] is True and all(c["cost_known"] for c in calls)
    expected = sum(c["tokens_in"] * 2 + c["tokens_out"] * 4 for c in calls) / 1e6
    assert result["cost_usd"] == pytest.approx(expected, rel=1e-3) and expected > 0
    assert result["status"] == "budget" and "cost" in result["reason"]
