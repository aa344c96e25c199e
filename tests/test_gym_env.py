"""The Gymnasium environment: gymnasium's own checker, an episode, truncation, the reward."""

from __future__ import annotations

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from mlagent_tui.core.bench import ENV_IDS, MLAgentEnv, register_envs
from mlagent_tui.core.tasks import Task, list_tasks, milestone_reward_for

from .agent_helpers import research
from .conftest import TINY, bwrap_ready

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


@pytest.fixture
def tiny_id() -> str:
    return register_envs([Task(TINY)])[0]


def test_bundled_tasks_are_registered() -> None:
    names = [t.name for t in list_tasks()]
    assert ENV_IDS == [f"mlagent/{n}" for n in names]
    assert all(i in gymnasium.registry for i in ENV_IDS)


def test_gymnasium_env_checker(tiny_id: str, tmp_path) -> None:
    env = gymnasium.make(tiny_id, home=tmp_path / "home", max_steps=3)
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_episode_is_a_session_with_milestone_reward(tiny_id: str, tmp_path) -> None:
    env = gymnasium.make(tiny_id, home=tmp_path / "home", max_steps=10)
    obs, info = env.reset(seed=0)
    assert "Research Plan and Status" in obs and "Action Input" in obs
    sid = info["session_id"]
    obs, reward, terminated, truncated, info = env.step(
        research("Execute Script", {"script_name": "train.py"})
    )
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert "wrote submission.csv" in obs and info["session_id"] == sid
    # an unparsable response: the observation is the agent's usual re-ask
    obs, reward, terminated, truncated, _ = env.step("I have no idea")
    assert "could not be parsed" in obs and not terminated and reward == 0.0
    _, _, _, _, info = env.step(research("Validate", {}))
    assert info["score"] == pytest.approx(1.0)
    obs, reward, terminated, truncated, info = env.step(research("Final Answer", {"x": 1}))
    assert terminated and not truncated and info["status"] == "finished"
    assert info["score"] == pytest.approx(1.0) and "Final score: 1" in obs
    # 4 responses, 1 did not parse: format ratio 3/4
    assert reward == pytest.approx(milestone_reward_for(Task(TINY).spec, 1.0, 0.75))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(research("Validate", {}))
    store = env.unwrapped.store
    row = store.session(sid)
    assert row["status"] == "finished" and row["model"] == "gym:external-policy"
    kinds = {e.kind for e in store.events(sid)}
    assert {"llm_call", "parse_error", "exec_finished", "score_recorded", "session_ended"} <= kinds
    env.close()


def test_budget_truncates_and_reward_is_configurable(tmp_path) -> None:
    seen = []

    def reward_fn(result, task, format_ratio) -> float:  # noqa: ANN001
        seen.append((result.status, result.valid, format_ratio, task.name))
        return 42.0

    env = MLAgentEnv(task_dir=TINY, home=tmp_path / "home", max_steps=1, reward_fn=reward_fn)
    env.reset()
    obs, reward, terminated, truncated, info = env.step(research("List Files", {"dir_path": "."}))
    assert truncated and not terminated and reward == 42.0
    assert info["status"] == "budget" and info["score"] is None
    assert seen == [("budget", False, 1.0, "tiny-task")]
    # a reset mid-episode closes the old session (stopped) and starts a fresh one
    _, first = env.reset()
    _, second = env.reset()
    assert first["session_id"] != second["session_id"]
    assert env.store.session(first["session_id"])["status"] == "stopped"
    env.close()
