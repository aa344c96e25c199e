"""A server of one's own that asks for no key, as `python -m llama_cpp.server` starts by default
(no --api_key, its default context of 2048 tokens): the session sends a placeholder key, the
pre-flight's one-token request catches a wrong URL in seconds, and a prompt that does not fit
the context fails at once, unretried, saying how to start a larger server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlagent_tui.core.llm import Message, ModelError, bundled_model_path, check_model, make_model

from .conftest import ROOT, TINY
from .test_api_server import _free_port

START_TIMEOUT_S = 180


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/models", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def keyless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of llama_cpp.server serving the bundled GGUF, started with no key and its
    default context."""
    log = tmp_path_factory.mktemp("keyless") / "server.log"
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_model_path()),
        "--model_alias", "smollm2", "--n_threads", "1", "--host", "127.0.0.1",
        "--port", str(port), "--verbose", "False",
    ]  # fmt: skip
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ready(base):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _no_key_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**env, "PYTHONPATH": str(ROOT)}


def test_a_keyless_server_answers_without_a_key(
    keyless: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = make_model("openai/smollm2", api_base=keyless, max_retries=0)
    answer = model.complete([Message(role="user", content="Say hi.")], max_tokens=4)
    assert answer.tokens_out >= 1
    check_model("openai/smollm2", api_base=keyless)  # the pre-flight's request succeeds


def test_a_wrong_url_is_one_line_before_any_session(keyless: str, tmp_path: Path) -> None:
    wrong = keyless.removesuffix("/v1") + "/nope/v1"
    with pytest.raises(ModelError, match="does not answer"):
        check_model("openai/smollm2", api_base=wrong)
    home = tmp_path / "home"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "run", "--task-dir", str(TINY),
         "--model", "openai/smollm2", "--api-base", wrong, "--max-steps", "1"],
        capture_output=True, text=True, env={**_no_key_env(), "MLAGENT_HOME": str(home)},
        timeout=300, cwd=ROOT,
    )  # fmt: skip
    took = time.monotonic() - started
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "does not answer" in lines[0] and "not found" in lines[0]
    with sqlite3.connect(home / "mlagent.db") as db:
        assert db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
    assert took < 60, f"the refusal took {took:.0f} s"


def test_a_context_too_small_fails_at_once_saying_how_to_grow_it(
    keyless: str, tmp_path: Path
) -> None:
    task = tmp_path / "long-task"  # a description as long as a real task's: 3000+ tokens
    shutil.copytree(TINY, task)
    notes = "\n".join(f"- Note {i}: read every file before changing it." for i in range(300))
    with (task / "description.md").open("a") as description:
        description.write(f"\n\n## Notes\n\n{notes}\n")
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "run", "--task-dir", str(task),
         "--model", "openai/smollm2", "--api-base", keyless, "--max-steps", "2", "--json"],
        capture_output=True, text=True, env={**_no_key_env(), "MLAGENT_HOME": str(home)},
        timeout=600, cwd=ROOT,
    )  # fmt: skip
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["status"] == "failed", proc.stderr
    assert "Missing credentials" not in result["reason"]
    assert "context" in result["reason"] and "--n_ctx 8192" in result["reason"]
    assert "gave up after" not in result["reason"]  # never retried
    assert "\n" not in result["reason"]


def test_a_missing_key_is_never_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm reports the openai client's "Missing credentials" as a 500: it is a key
    problem, answered at once, not five tries with back-off."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = make_model("openai/gpt-4o-mini", max_retries=4, base_delay_s=5.0)
    model.endpoint()  # litellm imported (seconds on a busy machine) before the clock starts
    started = time.monotonic()
    with pytest.raises(ModelError, match="authentication failed") as info:
        model.complete([Message(role="user", content="hi")], max_tokens=1)
    assert not info.value.retryable and "gave up" not in str(info.value)
    assert time.monotonic() - started < 5.0
