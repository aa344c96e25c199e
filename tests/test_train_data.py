"""trainer.data on a real store filled by replayed solve sessions on the tiny task."""

from __future__ import annotations

import json

import pytest

from mlagent_tui.core.store import (
    UpdateRecord,
    finish_training_run,
    record_update,
    start_training_run,
    training_runs,
    training_updates,
)
from trainer.data import (
    base_model_of,
    data_summary,
    groups,
    load_samples,
    single_shot_samples,
    split_by_base_model,
    trajectories,
    unit_score,
)
from trainer.prompts import step_prompt

from .conftest import bwrap_ready
from .train_helpers import gold_script, solve_session, solve_text

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def test_empty_store_says_nothing_is_trainable(store) -> None:
    summary = data_summary(store)
    assert summary.sessions_total == 0 and summary.samples == 0 and summary.groups == 0
    assert summary.message.startswith("no trainable sessions")
    assert summary.reward.count == 0 and summary.reward.mean == 0.0


def test_samples_rebuild_prompts_rewards_and_groups(tmp_path, home, store, tiny_task) -> None:
    gold = gold_script(tiny_task)
    crash = solve_text("raise SystemExit('oops')")
    sid = solve_session(
        tmp_path, home, store, tiny_task, [crash, solve_text(gold), solve_text(gold)]
    )
    # A second session whose first answer is unparseable: three re-asks, then a good draft.
    solve_session(
        tmp_path,
        home,
        store,
        tiny_task,
        ["no code here", "still none", "nope", solve_text(gold)],
        max_steps=2,
    )
    samples = load_samples(store)
    mine = [s for s in samples if s.session_id == sid]
    assert [s.mode for s in mine] == ["draft", "debug", "improve"]
    assert [s.ok for s in mine] == [False, True, True]
    assert mine[0].reward == 0.0 and mine[1].reward == pytest.approx(1.0)  # gold: mae 0
    assert mine[2].parent_score == pytest.approx(1.0)
    assert "Draft:" in mine[0].messages[-1]["content"]
    assert "oops" in mine[1].messages[-1]["content"]  # the debug prompt shows the failure
    # The rebuilt prompt is what the agent would send for that state, through core's agent.
    assert mine[1].messages == step_prompt(store, sid, 2, _task(tiny_task), {"agent": "solve"})
    failed = [s for s in samples if not s.parsed]
    assert len(failed) == 3 and all(s.reward == 0.0 for s in failed)
    assert failed[1].messages[-1]["content"].startswith("Your response could not be parsed")
    # Both sessions' drafts answer the same prompt: one group of the same state.
    drafts = [s for s in samples if s.mode == "draft" and s.attempt == 1]
    assert len({s.state_key for s in drafts}) == 1
    assert any(len(g) >= 2 for g in groups(samples))
    assert len(single_shot_samples(samples)) == len(samples)
    trajs = {t.session_id: t for t in trajectories(store)}
    assert trajs[sid].best_score == pytest.approx(1.0) and not trajs[sid].timed_out

    summary = data_summary(store)
    assert summary.sessions_total == 2 and summary.sessions_trainable == 2
    assert summary.samples == len(samples) and summary.parse_failures == 3
    assert summary.reward.max == pytest.approx(1.0) and summary.reward.min == 0.0
    assert summary.tasks[0].task == "tiny-task" and summary.groups >= 1
    json.dumps(summary.model_dump())


def test_other_base_model_is_excluded_with_a_count(tmp_path, home, store, tiny_task) -> None:
    gold = solve_text(gold_script(tiny_task))
    solve_session(tmp_path, home, store, tiny_task, [gold], name="local", logprobs=True)
    solve_session(
        tmp_path, home, store, tiny_task, [gold, gold], name="openai/gpt-4o-mini", logprobs=True
    )
    solve_session(tmp_path, home, store, tiny_task, [gold])  # replay: sampler unknown
    samples = load_samples(store)
    keep, other = split_by_base_model(samples, "local")
    assert len(other) == 2 and {s.model for s in other} == {"openai/gpt-4o-mini"}
    assert len(keep) == 2 and sum(s.has_sampler_logprobs for s in keep) == 1
    summary = data_summary(store, base_model="local")
    assert summary.excluded_other_base_model == 2 and summary.excluded_sessions == 1
    assert summary.samples == 2 and summary.samples_with_logprobs == 1


def test_base_model_names_and_unit_scores(tiny_task) -> None:
    # a bare `local` was always the bundled SmolLM2: one identity with `smollm2`
    assert base_model_of("local") == "smollm2" == base_model_of("smollm2")
    assert base_model_of("policy:local@run-1/update-0003") == "smollm2"
    assert base_model_of("local+mlagent-1a2b3c4d") == "local+mlagent-1a2b3c4d"
    assert base_model_of("replay:/tmp/x.jsonl") is None
    spec = _task(tiny_task).spec  # mae, lower is better: baseline 1.0, gold 0.05
    assert unit_score(spec, None, False) == 0.0
    assert unit_score(spec, 1.0, True) == pytest.approx(0.1)
    assert unit_score(spec, 0.0, True) == pytest.approx(1.0)
    assert unit_score(spec, 5.0, True) == pytest.approx(0.1)


def test_training_tables_round_trip(store) -> None:
    start_training_run(
        store, "run-a", recipe="offline", base_model="local", config={"steps": 2}, out_dir="/o"
    )
    record_update(store, "run-a", UpdateRecord(update=1, reward_mean=0.5, extra={"groups": 3}))
    record_update(store, "run-a", UpdateRecord(update=1, reward_mean=0.25))  # redone on resume
    record_update(store, "run-a", UpdateRecord(update=2, reward_mean=0.75, loss=0.1))
    finish_training_run(store, "run-a", "finished")
    ups = training_updates(store, "run-a")
    assert [u.reward_mean for u in ups] == [0.25, 0.75] and ups[1].loss == 0.1
    runs = training_runs(store)
    assert runs[0].status == "finished" and runs[0].updates == 2 and runs[0].config["steps"] == 2
    assert "m004_training" in store.migrations()


def _task(folder):
    from mlagent_tui.core.tasks import find_task

    return find_task(task_dir=folder)
