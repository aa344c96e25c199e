"""How many SmolLM2 responses through the research grammar `parse_response` reads (target 100%).

50 responses at temperature 0.7 over varied prompts; each LocalModel call samples with a new
seed. Uses the real action registry when it imports, else a stand-in list of the same shape.
"""

from __future__ import annotations

import collections
import statistics
import sys
import time
from pathlib import Path

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mlagent_tui.core.agent.grammar import response_grammar, response_max_tokens  # noqa: E402
from mlagent_tui.core.agent.parsing import ResponseParseError, parse_response  # noqa: E402
from mlagent_tui.core.llm.base import Message  # noqa: E402

N = 50
AGENT_MAX_TOKENS = 1024  # ResearchAgent's default, reported for comparison

TASKS = [
    "Improve the test accuracy of train.py on the iris data set by 10%.",
    "Predict house prices in train.csv; the metric is RMSE, lower is better.",
    "Classify breast-cancer samples; submission.csv needs columns id,label.",
    "Speed up the script slow.py without changing its output.",
    "Find the best strategy in the battle-of-sexes game; validate before you submit.",
]
STAGES = [
    "This is step 1: nothing has been done yet.",
    "Observation: train.py  data.csv  README.md",
    "Observation: the baseline prints 'accuracy: 0.81'.",
    "Observation: Traceback ... KeyError: 'label'",
    "Observation: the edited script was saved to train_v2.py.",
]


def research_actions() -> list[tuple[str, type[BaseModel]]]:
    """The registry's visible actions, or a stand-in with the same kinds of inputs."""
    try:
        from mlagent_tui.core.agent import actions

        found = [(a.name, a.input_model) for a in actions.visible_actions()]
        if found:
            return found
    except Exception:  # noqa: BLE001 - the registry is optional for this measurement
        pass

    class Dir(BaseModel):
        dir_path: str

    class Script(BaseModel):
        script_name: str

    class Lines(BaseModel):
        script_name: str
        start_line_number: int
        end_line_number: int

    class Edit(BaseModel):
        script_name: str
        edit_instruction: str
        save_name: str

    class Understand(BaseModel):
        file_name: str
        things_to_look_for: str

    class Empty(BaseModel):
        pass

    return [
        ("List Files", Dir),
        ("Understand File", Understand),
        ("Inspect Script Lines", Lines),
        ("Execute Script", Script),
        ("Edit Script (AI)", Edit),
        ("Undo Edit Script", Script),
        ("Validate", Empty),
        ("Submit", Empty),
    ]


def research_prompt(i: int) -> list[Message]:
    names = ", ".join(name for name, _ in research_actions())
    system = (
        "You are a helpful research assistant doing machine-learning research. "
        f"You can use these actions: {names}.\n"
        "Always respond in this format exactly:\nReflection: ...\nResearch Plan and Status: ...\n"
        "Fact Check: ...\nThought: ...\nAction: <action name>\nAction Input: <JSON object>"
    )
    user = f"Research problem: {TASKS[i % len(TASKS)]}\n\n{STAGES[(i // len(TASKS)) % len(STAGES)]}"
    return [Message(role="system", content=system), Message(role="user", content=user)]


def main() -> None:
    from mlagent_tui.core.llm.local import LocalModel

    actions = research_actions()
    grammar = response_grammar(actions)
    budget = response_max_tokens(actions)  # the longest answer the grammar allows
    model = LocalModel(n_ctx=budget + 1024, n_threads=2, seed=1234)
    known = [name for name, _ in actions]
    ok, finish, used = 0, collections.Counter(), collections.Counter()
    tokens, failures = [], []
    start = time.perf_counter()
    for i in range(N):
        c = model.complete(research_prompt(i), grammar=grammar, max_tokens=budget, temperature=0.7)
        finish[c.finish_reason] += 1
        tokens.append(c.tokens_out)
        try:
            r = parse_response(c.text, known_actions=known)
        except ResponseParseError as exc:
            failures.append((str(exc), c.text[-200:]))
            continue
        fields = list(dict(actions)[r.action].model_fields) if r.action in known else None
        if fields is not None and list(r.action_input) == fields:
            ok += 1
            used[r.action] += 1
        else:
            failures.append((f"action {r.action!r} input {list(r.action_input)}", ""))
    took = time.perf_counter() - start
    print(
        f"{ok}/{N} responses parse with the right action and fields ({100 * ok / N:.0f}%, "
        f"target 100%); {len(actions)} actions"
    )
    over = sum(t > AGENT_MAX_TOKENS for t in tokens)
    print(f"  max_tokens {budget} (= response_max_tokens); finish reasons {dict(finish)}")
    print(
        f"  tokens median {statistics.median(tokens):.0f}, max {max(tokens)}; {over} of {N} "
        f"longer than {AGENT_MAX_TOKENS}; {took:.0f} s in all"
    )
    print(f"  actions chosen: {dict(used.most_common())}")
    for error, tail in failures[:5]:
        print(f"  FAILED: {error}\n    ...{tail!r}")
    model.close()


if __name__ == "__main__":
    main()
