"""Sessions end to end on the tiny task with the replay model (the one allowed fake)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from mlagent_tui.core.llm import make_model
from mlagent_tui.core.llm.base import Completion, ModelError
from mlagent_tui.core.llm.replay import ReplayModel
from mlagent_tui.core.session import Approval, BudgetLimits, Session, SessionConfig, SessionError

from .agent_helpers import Recording, research, write_replay
from .conftest import bwrap_ready

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

HAPPY = [
    research("List Files", {"dir_path": "."}),
    research("Execute Script", {"script_name": "train.py"}, plan="1. run baseline **done**"),
    research("Validate", {}),
    research("Final Answer", {"final_answer": "baseline"}),
]


def start(tmp_path: Path, home, store, tiny_task: Path, responses: list[str], **cfg) -> Session:
    replay = write_replay(tmp_path / "replay.jsonl", responses)
    config = SessionConfig(task_dir=str(tiny_task), model=f"replay:{replay}", **cfg)
    return Session.create(home, store, config)


def observations(store, session_id: str) -> list[str]:
    return [e.payload.observation for e in store.events(session_id, kinds=["action_finished"])]


def test_happy_path_records_everything(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, HAPPY)
    result = s.run()
    assert result.status == "finished" and result.steps == 4 and result.valid
    assert result.final_score == pytest.approx(1.0) and result.parse_errors == 0
    kinds = [e.kind for e in store.events(s.id)]
    for kind in (
        "session_started",
        "llm_call",
        "agent_response",
        "action_started",
        "exec_output",
        "exec_finished",
        "file_changed",
        "score_recorded",
        "plan_edited",
        "action_finished",
        "session_ended",
    ):
        assert kind in kinds, kind
    obs = observations(store, s.id)
    assert "train.py" in obs[0] and "wrote submission.csv" in obs[1] and "mae = 1" in obs[2]
    changed = [e.payload.path for e in store.events(s.id, kinds=["file_changed"])]
    assert "submission.csv" in changed
    splits = [r["split"] for r in store.rows("scores", s.id)]
    assert splits == ["validate", "submit"]
    assert store.session(s.id)["status"] == "finished"


def test_bad_responses_become_observations(tmp_path, home, store, tiny_task) -> None:
    big = "x = 'y' * 100\n" + "print('z' * 1000)\n" * 2000
    responses = [
        "I think we should train a model.",  # no action: 3 parse errors, one wasted step
        "still nothing",
        "",
        research("Fly To Moon", {}),
        research("Read File", "{not json"),
        research("Read File", {"file_name": "../../etc/passwd"}),
        research("Read File", {"file_name": "missing.csv"}),
        research("Write File", {"file_name": "train.csv", "content": "hacked"}),
        research("Write File", {"file_name": "big.py", "content": big}),
        research("Execute Script", {"script_name": "big.py"}),
        research("Read File", {"file_name": "nope.txt"}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=8)
    result = s.run()
    # invalid JSON is a parse error too: the retry consumed the next response
    assert result.steps == 8 and result.parse_errors == 4
    obs = observations(store, s.id)
    assert "could not be parsed" in obs[0]
    assert "Unknown action 'Fly To Moon'" in obs[1]
    assert "outside the workspace" in obs[2]
    assert "missing.csv does not exist" in obs[3]
    assert "read-only" in obs[4]
    assert (s.workspace.root / "train.csv").read_text().startswith("id,x,y")
    assert len(obs[6]) <= 110_000 and "exit code 0" in obs[6]
    assert "characters cut" in s.agent.messages(s.state)[1]["content"]
    assert result.status == "budget" and "step budget" in result.reason
    errors = [e.payload.error for e in store.events(s.id, kinds=["parse_error"])]
    assert any("empty" in e for e in errors) and any("JSON" in e for e in errors)


def test_replay_running_out_ends_clearly(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, HAPPY[:2])
    result = s.run()
    assert result.status == "stopped" and "ran out" in result.reason and result.steps == 2
    # auto-submit graded the current submission
    assert result.valid and result.final_score == pytest.approx(1.0)


class Failing:
    name = "failing"
    supports_grammar = False

    def complete(self, messages, **kwargs) -> Completion:  # noqa: ANN001, ANN003
        raise ModelError("401 invalid api key", retryable=False)


def test_model_error_fails_the_session_keeping_steps(tmp_path, home, store, tiny_task) -> None:
    config = SessionConfig(task_dir=str(tiny_task), model="replay:unused")
    s = Session.create(home, store, config, model=Failing())
    result = s.run()
    assert result.status == "failed" and "invalid api key" in result.reason
    assert store.session(s.id)["status"] == "failed"


def test_resume_continues_where_it_stopped(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, HAPPY, max_steps=2)
    first = s.run()
    assert first.steps == 2 and first.status == "budget"
    with pytest.raises(SessionError, match="step budget of 2 used.*--max-steps"):
        Session.resume(home, store, s.id)  # the spent budget would run nothing
    resumed = Session.resume(home, store, s.id, limits=BudgetLimits(max_steps=8))
    assert resumed.max_steps == 10  # 8 steps counted from step 2
    result = resumed.run()
    assert result.status == "finished" and result.steps == 4
    actions = [e.payload.action for e in store.events(s.id, kinds=["action_finished"])]
    assert actions == ["List Files", "Execute Script", "Validate", "Final Answer"]


def test_resume_and_fork_bad_input(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, HAPPY)
    s.run()
    with pytest.raises(SessionError, match="finished"):
        Session.resume(home, store, s.id)
    with pytest.raises(SessionError, match="no session"):
        Session.resume(home, store, "nope")
    with pytest.raises(SessionError, match="no completed step 9"):
        Session.fork(home, store, s.id, 9)


def test_fork_restores_the_state_after_step_k(tmp_path, home, store, tiny_task) -> None:
    responses = [
        research("Memory Write", {"content": "baseline mae is 1 #baseline"}),
        research("Write File", {"file_name": "a.py", "content": "print(1)\n"}),
        research("Write File", {"file_name": "a.py", "content": "print(2)\n"}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses)
    s.run()
    child = Session.fork(home, store, s.id, 2, max_steps=2)
    assert (child.workspace.root / "a.py").read_text() == "print(1)\n"
    assert [n.content for n in child.state.memory.notes] == ["baseline mae is 1 #baseline"]
    assert store.session(child.id)["parent_session_id"] == s.id
    assert len(child.state.history) == 2
    assert child.model.position == 2  # the replay model skips what the parent consumed


def test_fork_at_the_submitting_step_submits_anew(tmp_path, home, store, tiny_task) -> None:
    """The parent's submission is the parent's: a fork that ends on its budget auto-submits."""
    s = start(tmp_path, home, store, tiny_task, HAPPY)
    s.run()
    last = s.completed
    listing = [research("List Files", {"dir_path": "."})]
    more = ReplayModel(write_replay(tmp_path / "more.jsonl", listing))
    child = Session.fork(home, store, s.id, last, model=more, max_steps=1)  # one new step
    result = child.run()
    assert result.status == "budget" and result.valid and result.final_score is not None
    assert [e.payload.split for e in store.events(child.id, kinds=["score_recorded"])][-1] == (
        "submit"
    )


def test_person_hooks(tmp_path, home, store, tiny_task) -> None:
    replay = write_replay(
        tmp_path / "r.jsonl",
        [
            research("Write File", {"file_name": "a.py", "content": "print(1)\n"}),
            research("Execute Script", {"script_name": "train.py"}),
            research("List Files", {"dir_path": "."}),
        ],
    )
    model = Recording(make_model(f"replay:{replay}"))
    config = SessionConfig(
        task_dir=str(tiny_task), model=f"replay:{replay}", approval="confirm-exec", max_steps=1
    )
    s = Session.create(home, store, config, model=model)
    s.approver = lambda response: Approval(approved=False, reason="use the validation split")
    s.run()  # step 1: write (no approval needed)
    s.edit_plan("1. the person's plan")
    s.add_hint("try gradient boosting")
    undone = s.undo_last_edit()
    assert undone.author == "human" and not (s.workspace.root / "a.py").exists()
    with pytest.raises(ValueError):
        s.edit_plan("   ")
    s.max_steps, s.ended = 2, None
    s.run()  # step 2: execution rejected
    obs = observations(store, s.id)
    assert "rejected this action: use the validation split" in obs[1]
    assert "the person's plan" in model.prompts[1] and "try gradient boosting" in model.prompts[1]
    kinds = [e.kind for e in store.events(s.id)]
    assert {"approval_asked", "approval_given", "hint_given"} <= set(kinds)
    plans = [(r["author"], r["plan"]) for r in store.rows("plans", s.id)]
    assert ("human", "1. the person's plan") in plans


def test_pause_and_stop_from_another_thread(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, HAPPY * 3, max_steps=50)
    s.pause()
    worker = threading.Thread(target=s.run)
    worker.start()
    worker.join(0.3)
    assert worker.is_alive() and s.completed == 0  # paused before the first step
    s.stop("enough")
    worker.join(30)
    assert not worker.is_alive() and s.ended.status == "stopped" and s.ended.reason == "enough"
    assert [e.kind for e in store.events(s.id)][-3:] == [
        "paused",
        "score_recorded",
        "session_ended",
    ]


def test_budget_auto_submits_best_validated(tmp_path, home, store, tiny_task) -> None:
    worse = (
        "import csv\nrows = list(csv.DictReader(open('test.csv')))\n"
        "body = ''.join(r['id'] + ',50\\n' for r in rows)\n"
        "open('submission.csv', 'w').write('id,y\\n' + body)\n"
    )
    responses = [
        research("Execute Script", {"script_name": "train.py"}),
        research("Validate", {}),
        research("Write File", {"file_name": "worse.py", "content": worse}),
        research("Execute Script", {"script_name": "worse.py"}),
        research("Validate", {}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=5)
    result = s.run()
    assert result.status == "budget" and result.final_score == pytest.approx(1.0)
    restored = [
        e for e in store.events(s.id, kinds=["file_changed"]) if e.payload.author == "system"
    ]
    assert restored and "best validated" in restored[0].payload.diff


def test_solve_agent_drafts_debugs_improves(tmp_path, home, store, tiny_task) -> None:
    good = Path(tiny_task / "private" / "reference" / "gold.py").read_text()
    responses = [
        "Plan: crash first\n```python\nraise SystemExit('oops')\n```",
        f"Plan: fix it\n```python\n{good}```",
        f"Plan: same again\n```python\n{good}```",
    ]
    s = start(tmp_path, home, store, tiny_task, responses, agent="solve", max_steps=3)
    result = s.run()
    assert result.valid and result.final_score == pytest.approx(0.0)
    assert result.medal == "gold" and result.success
    obs = observations(store, s.id)
    assert "oops" in obs[0] and "Validation: mae = 0" in obs[1]


def test_export_responses_round_trip(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, HAPPY)
    s.run()
    texts = [e.payload.text for e in store.events(s.id, kinds=["llm_call"])]
    assert texts == HAPPY
    json.dumps([e.model_dump() for e in store.events(s.id)])


def test_a_stuck_agent_ends_keeping_its_best_submission(tmp_path, home, store, tiny_task) -> None:
    """The same failing action with the same input `stuck_after` times in a row ends the session
    (make run once repeated `Execute Script validated.py` for 28 steps); the best validated
    submission is still graded. A different input, or a success between, resets the count."""
    missing = research("Execute Script", {"script_name": "validated.py"})
    responses = [
        research("Execute Script", {"script_name": "train.py"}),
        research("Validate", {}),
        missing,
        research("Execute Script", {"script_name": "other.py"}),  # another input: not the same
        *[missing] * 3,
        *[research("List Files", {"dir_path": "."})] * 3,
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=20, stuck_after=3)
    result = s.run()
    assert result.status == "stopped" and result.steps == 7
    assert result.reason == "stuck: Execute Script validated.py failed 3 times in a row"
    assert result.valid and result.final_score == pytest.approx(1.0)
    (tmp_path / "b").mkdir()
    ok = start(tmp_path / "b", home, store, tiny_task, responses, max_steps=8, stuck_after=0)
    assert ok.run().status == "budget"  # 0: never stuck


def test_an_agent_repeating_an_unchanged_success_ends(tmp_path, home, store, tiny_task) -> None:
    """One action and input whose observation never changes (make run once validated the same
    submission from step 10 to 30) ends the session, as does rerunning an unchanged script
    whose output stays the same; another action in between starts the count again."""
    validate = research("Validate", {})
    responses = [
        research("Execute Script", {"script_name": "train.py"}),
        *[validate] * 2,
        research("List Files", {"dir_path": "."}),  # in between: the count starts again
        *[validate] * 3,
        *[research("Execute Script", {"script_name": "train.py"})] * 3,
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=20, stuck_after=3)
    result = s.run()
    assert result.status == "stopped" and result.steps == 7
    assert result.reason == "stuck: Validate gave the same result 3 times in a row"
    assert result.valid and result.final_score == pytest.approx(1.0)
    runs = [research("Execute Script", {"script_name": "train.py"})] * 4  # an unchanged script
    (tmp_path / "b").mkdir()
    again = start(tmp_path / "b", home, store, tiny_task, runs, max_steps=4, stuck_after=3)
    ended = again.run()
    assert (ended.status, ended.steps) == ("stopped", 3)
    assert ended.reason == "stuck: Execute Script train.py gave the same result 3 times in a row"
    with pytest.raises(ValueError):
        SessionConfig(task_dir=str(tiny_task), stuck_after=-1)


def test_the_same_result_ignores_how_long_the_run_took() -> None:
    """A rerun of an unchanged script differs only in its run time: the stuck check sees one
    result (timing jitter once let a session escape it)."""
    from mlagent_tui.core.session.budget import _untimed

    a = "exit code 0, 0.3 s\nValidation: mae = 1"
    assert _untimed(a) == _untimed("exit code 0, 1.25 s\nValidation: mae = 1")
    assert _untimed(a) != _untimed("exit code 1, 0.3 s\nValidation: mae = 1")
    assert _untimed(a) != _untimed("exit code 0, 0.3 s\nValidation: mae = 2")
