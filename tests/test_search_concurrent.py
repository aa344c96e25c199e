"""A search on an API model generates several nodes at once, never past its step budget.

The server is a real OpenAI-compatible HTTP server on 127.0.0.1 (in this process, so it can
count the requests it holds at once); each answer takes a while, as a remote model's does.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mlagent_tui.core.llm.local import LocalModel
from mlagent_tui.core.session import Session, SessionConfig

from .conftest import bwrap_ready
from .search_helpers import GOOD, reply, start

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


class SlowServer(ThreadingHTTPServer):
    """Answers every chat completion with GOOD after `delay_s`; `status` != 200 fails them.
    `requests` counts generations (not the one-token probe a session starts with)."""

    daemon_threads = True

    def __init__(self, delay_s: float, status: int = 200) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.delay_s, self.status = delay_s, status
        self.lock = threading.Lock()
        self.now = self.most = self.requests = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    server: SlowServer

    def log_message(self, *args: object) -> None:  # quiet
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        srv = self.server
        asked = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with srv.lock:
            srv.now += 1
            srv.requests += asked.get("max_tokens") != 1  # not the session's one-token probe
            srv.most = max(srv.most, srv.now)
        time.sleep(srv.delay_s)
        with srv.lock:
            srv.now -= 1
        status = 200 if asked.get("max_tokens") == 1 else srv.status  # the probe is answered
        if status != 200:
            body = {"error": {"message": "bad request: no such model", "type": "invalid"}}
        else:
            body = {
                "id": "c1",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": "fake",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply(GOOD)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
            }
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(delay_s: float, status: int = 200) -> Iterator[SlowServer]:
    srv = SlowServer(delay_s, status)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def slow() -> Iterator[SlowServer]:
    yield from serve(1.0)


def search(home, store, task: Path, srv: SlowServer, **cfg) -> Session:  # noqa: ANN001, ANN003
    config = SessionConfig(
        task_dir=str(task),
        model="openai/fake",
        model_options={"api_base": srv.base, "max_retries": 0},
        agent="search",
        **{"from_starter": False, **cfg},  # the tree is the server's replies alone
    )
    return Session.create(home, store, config)


def test_two_workers_hold_two_generations_at_once(home, store, tiny_task, slow) -> None:
    s = search(home, store, tiny_task, slow, workers=2, max_steps=4)
    result = s.run()
    calls = [e.payload for e in store.events(s.id, kinds=["llm_call"])]
    finished = [e.payload for e in store.events(s.id, kinds=["node_finished"])]
    assert slow.most == 2, "the two workers' generations did not overlap"
    assert len(calls) == slow.requests == 4
    assert len(finished) == 4 and all(f.status == "valid" for f in finished)
    assert result.valid and result.status == "budget"


def test_generations_in_flight_never_overrun_the_step_budget(home, store, tiny_task, slow) -> None:
    s = search(home, store, tiny_task, slow, workers=3, max_steps=2)
    s.run()
    assert slow.requests == 2
    assert len(list(store.events(s.id, kinds=["llm_call"]))) == 2


def test_one_worker_asks_one_at_a_time(home, store, tiny_task, slow) -> None:
    s = search(home, store, tiny_task, slow, workers=1, max_steps=2)
    s.run()
    assert slow.most == 1 and slow.requests == 2


def test_a_model_error_ends_the_search_with_its_reason(home, store, tiny_task) -> None:
    for srv in serve(0.2, status=400):
        s = search(home, store, tiny_task, srv, workers=2, max_steps=6)
        result = s.run()
        assert result.status == "failed"
        assert "model error" in result.reason and "no such model" in result.reason
        assert not list(store.events(s.id, kinds=["node_created"]))


def overlapping(events: list) -> bool:
    """Whether two model calls were in flight at once (each ends at its event's time)."""
    spans = sorted((e.ts - e.payload.latency_s, e.ts) for e in events)
    return any(b[0] < a[1] - 0.05 for a, b in zip(spans, spans[1:], strict=False))


def test_the_local_model_generates_on_one_replica_per_core(home, store, tiny_task) -> None:
    """Real llama.cpp: with two workers on two cores, two contexts write nodes at once."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: one context")
    config = SessionConfig(task_dir=str(tiny_task), agent="search", workers=2, max_steps=4)
    s = Session.create(home, store, config)
    s.run()
    calls = store.events(s.id, kinds=["llm_call"])
    assert len(calls) == 4 and overlapping(calls)
    assert len(store.events(s.id, kinds=["node_created"])) >= 2
    threads = s.model._lib.llama_n_threads_batch(s.model.llm.ctx)
    assert threads == os.cpu_count()  # after the search, its cores are the model's own again
    one = Session.create(home, store, config.model_copy(update={"workers": 1, "max_steps": 2}))
    one.run()
    assert not overlapping(store.events(one.id, kinds=["llm_call"]))


def test_workers_share_the_cores(tmp_path, home, store, tiny_task, monkeypatch) -> None:
    """On two cores, two workers get one each: a replica evaluates prompts on one thread and a
    node's script gets one BLAS/OpenMP thread (four threads on two cores wait on each other);
    one worker has both, and the model has both again after a search."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    model = LocalModel(n_ctx=256, lookup=False)
    batch = model._lib.llama_n_threads_batch
    pair = model.replicas(2)
    assert [batch(m.llm.ctx) for m in pair] == [1, 1]
    assert model.replicas(1) == [model] and batch(model.llm.ctx) == 2
    pair[1].close()
    model.close()
    script = "import os\nprint('THREADS', os.environ['OMP_NUM_THREADS'])\n" + GOOD
    for workers, want in ((2, "1"), (1, "2")):
        s = start(
            tmp_path / str(workers),
            home,
            store,
            tiny_task,
            [reply(script)],
            workers=workers,
            max_steps=1,
        )
        s.run()
        (done,) = [e.payload for e in store.events(s.id, kinds=["node_finished"])]
        assert done.status == "valid" and f"THREADS {want}" in done.output


def test_nodes_in_generation_count_against_max_nodes(home, store, tiny_task, slow) -> None:
    s = search(home, store, tiny_task, slow, workers=3, max_steps=10, max_nodes=2)
    s.run()
    assert len(store.events(s.id, kinds=["node_created"])) == 2 and slow.requests == 2
