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


def test_unseeded_reset_draws_the_task_seed_from_np_random(tmp_path) -> None:
    """Gymnasium's convention: reset(seed=s) seeds np_random; reset() draws from it."""

    def seeds(env: MLAgentEnv, calls: list[int | None]) -> list[int]:
        out = []
        for seed in calls:
            _, info = env.reset(seed=seed)
            assert env.session is not None and env.session.config.seed == info["seed"]
            out.append(info["seed"])
        return out

    env = MLAgentEnv(task_dir=TINY, home=tmp_path / "a", max_steps=2, seed=7)
    first = seeds(env, [None, None, 5, None])
    env.close()
    again = MLAgentEnv(task_dir=TINY, home=tmp_path / "b", max_steps=2, seed=7)
    second = seeds(again, [None, 5, None])
    again.close()
    # not the constructor's seed every time: two draws from np_random
    assert first[0] != first[1] and 7 not in first[:2]
    # the same constructor seed gives the same stream; an explicit seed is the task's seed
    assert second[0] == first[0] and first[2] == second[1] == 5
    # after reset(seed=5) the next unseeded reset is the same draw, whatever came before
    assert first[3] == second[2]


def test_spaces_declare_exactly_what_step_accepts(tiny_id: str, tmp_path) -> None:
    env = MLAgentEnv(task_dir=TINY, home=tmp_path / "home", max_steps=5)
    space = env.action_space
    assert space == env.observation_space and repr(space) == "UnicodeText(0, 1000000)"
    for text in ("", "héllo wörld — ≤ 😀\n\tcode()", "x" * space.max_length):
        assert space.contains(text)
    for text in ("\ud800", "ok \udcff", "x" * (space.max_length + 1), b"bytes", 3):
        assert not space.contains(text)
    chars = space.character_set
    assert "😀" in chars and "\x00" in chars and "\udc80" not in chars and "ab" not in chars
    assert len(chars) == 0x110000 - 0x800
    # a sensible sample: short, in the space, reproducible from the space's seed
    space.seed(3)
    samples = [space.sample() for _ in range(20)]
    assert all(space.contains(x) and len(x) <= 64 for x in samples)
    space.seed(3)
    assert [space.sample() for _ in range(20)] == samples
    assert len(space.sample(mask=(10, None))) == 10
    # what the space does not contain is refused, and the episode goes on
    _, info = env.reset(seed=0)
    for bad in ("\ud800 lone surrogate", "x" * (space.max_length + 1), 42):
        with pytest.raises(ValueError, match="not in the action space"):
            env.step(bad)
    obs, reward, terminated, truncated, after = env.step(
        research("Execute Script", {"script_name": "train.py"})
    )
    assert after["session_id"] == info["session_id"] and "wrote submission.csv" in obs
    assert env.observation_space.contains(obs) and not terminated
    env.close()
