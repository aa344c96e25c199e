"""The research and solve response formats: tolerant parsing, clear errors, grammars that compile
in llama.cpp, and real SmolLM2 output through the grammar that always parses."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from mlagent_tui.core.agent.grammar import response_max_tokens
from mlagent_tui.core.agent.parsing import (
    ResponseParseError,
    canonical_action,
    parse_response,
    parse_solve_response,
    response_grammar,
    solve_grammar,
)


class ListFilesInput(BaseModel):
    dir_path: str


class ExecuteScriptInput(BaseModel):
    script_name: str


class InspectScriptLinesInput(BaseModel):
    script_name: str
    start_line_number: int
    end_line_number: int


class EditScriptInput(BaseModel):
    script_name: str
    edit_instruction: str
    save_name: str


class UnderstandFileInput(BaseModel):
    file_name: str
    things_to_look_for: str


class FinalAnswerInput(BaseModel):
    final_answer: str


class WriteMemoryInput(BaseModel):
    note: str
    tags: list[str]


class ReadMemoryInput(BaseModel):
    query: str
    k: int | None


class SetOptionsInput(BaseModel):
    verbose: bool
    learning_rate: float


class ValidateInput(BaseModel):
    pass


ACTIONS: list[tuple[str, type[BaseModel]]] = [
    ("List Files", ListFilesInput),
    ("Copy File", EditScriptInput),
    ("Undo Edit Script", ExecuteScriptInput),
    ("Execute Script", ExecuteScriptInput),
    ("Final Answer", FinalAnswerInput),
    ("Understand File", UnderstandFileInput),
    ("Inspect Script Lines", InspectScriptLinesInput),
    ("Edit Script (AI)", EditScriptInput),
    ("Edit Script Segment (AI)", EditScriptInput),
    ("Write Memory", WriteMemoryInput),
    ("Read Memory", ReadMemoryInput),
    ("Set Options", SetOptionsInput),
    ("Validate", ValidateInput),
]
NAMES = [name for name, _ in ACTIONS]

GOOD = """Reflection: The directory holds train.py and data.
Research Plan and Status: 1. Inspect files (done)
2. Run the baseline
Fact Check: train.py exists - confirmed by the listing
Thought: Run the baseline to get a score.
Action: Execute Script
Action Input: {"script_name": "train.py"}"""


# ---------------------------------------------------------------- tolerant parsing
def test_plain_response() -> None:
    r = parse_response(GOOD)
    assert r.reflection == "The directory holds train.py and data."
    assert r.plan == "1. Inspect files (done)\n2. Run the baseline"
    assert r.fact_check.startswith("train.py exists")
    assert r.thought == "Run the baseline to get a score."
    assert r.action == "Execute Script"
    assert r.action_input == {"script_name": "train.py"}


@pytest.mark.parametrize(
    "text",
    [
        GOOD.lower().replace("train.py", "train.py"),  # lower-case headers
        GOOD.replace("Action:", "ACTION :").replace("Thought:", "  Thought  :"),
        GOOD.replace("Reflection:", "**Reflection:**").replace("Action:", "**Action**:"),
        GOOD.replace("Thought:", "## Thought:").replace("Fact Check:", "Fact-Check:"),
        "```\n" + GOOD + "\n```",  # the whole response fenced
        "Sure! Here is my response.\n\n" + GOOD,  # a preamble
        GOOD + "\nObservation: the script printed 0.93\nReflection: made up",  # hallucinated obs
        GOOD + "\n\nI will wait for the result.",  # text after the JSON
    ],
)
def test_tolerated_variants(text: str) -> None:
    r = parse_response(text)
    assert r.action.lower() == "execute script"
    assert r.action_input == {"script_name": "train.py"}


def test_multiline_sections_and_fenced_pretty_json() -> None:
    text = (
        "Reflection:\n  First line.\n  Second line.\n\n"
        "Research Plan and Status:\n- a\n- b\n"
        "Fact Check: none\nThought:\nlook at lines\n"
        "Action: Inspect Script Lines\n"
        'Action Input: ```json\n{\n  "script_name": "train.py",\n  "start_line_number": 1,\n'
        '  "end_line_number": 20,\n}\n```\n'
    )
    r = parse_response(text)
    assert r.reflection == "First line.\n  Second line."
    assert r.plan == "- a\n- b"
    assert r.thought == "look at lines"
    assert r.action_input == {
        "script_name": "train.py",
        "start_line_number": 1,
        "end_line_number": 20,
    }


def test_json_details() -> None:
    def inp(json_text: str) -> dict:
        return parse_response(GOOD.replace('{"script_name": "train.py"}', json_text)).action_input

    assert inp('{"a": [1, 2,], "b": {"c": 1,},}') == {"a": [1, 2], "b": {"c": 1}}
    assert inp('{"s": "keep, } and ,] and \\" inside",}') == {"s": 'keep, } and ,] and " inside'}
    assert inp('{"edit": "line one\nline two"}') == {"edit": "line one\nline two"}  # raw newline
    assert inp("{}") == {}
    assert inp('{"edit": "add a line\nThought: not a header"}') == {
        "edit": "add a line\nThought: not a header"
    }
    assert inp('{"x": 1} and then {"y": 2}') == {"x": 1}


def test_action_on_same_line_as_json_and_missing_input_header() -> None:
    text = GOOD.replace("Action: Execute Script\nAction Input: ", "Action: Execute Script\n")
    assert parse_response(text).action_input == {"script_name": "train.py"}
    text = GOOD.replace("Execute Script\nAction Input: ", "Execute Script ")
    assert parse_response(text).action == "Execute Script"


def test_known_actions_canonical_names() -> None:
    text = GOOD.replace("Execute Script", "`execute script`")
    assert parse_response(text, known_actions=NAMES).action == "Execute Script"
    text = GOOD.replace("Execute Script", "edit script (ai)")
    assert parse_response(text, known_actions=NAMES).action == "Edit Script (AI)"
    assert canonical_action("edit_script_ai", NAMES) == "Edit Script (AI)"
    # unknown names pass through: the registry reports them
    text = GOOD.replace("Execute Script", "Fly To Moon")
    assert parse_response(text, known_actions=NAMES).action == "Fly To Moon"


# -------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty response"),
        ("   \n ", "empty response"),
        (GOOD.split("Action:")[0], "no 'Action:' line found"),
        (GOOD.replace('Action Input: {"script_name": "train.py"}', ""), "no 'Action Input:'"),
        (GOOD.replace('{"script_name": "train.py"}', ""), "Action Input is empty"),
        (
            GOOD.replace('{"script_name": "train.py"}', '{"script_name": train.py}'),
            "not valid JSON",
        ),
        (GOOD.replace('{"script_name": "train.py"}', '{"script_name": "train.py"'), "not closed"),
        (GOOD.replace('{"script_name": "train.py"}', '["train.py"]'), "must be a JSON object"),
        (GOOD.replace('{"script_name": "train.py"}', '[{"a": 1}]'), "must be a JSON object"),
        (GOOD.replace('{"script_name": "train.py"}', '"train.py"'), "must be a JSON object"),
        (GOOD.replace('{"script_name": "train.py"}', "train.py"), "not valid JSON"),
        (GOOD.replace("Action: Execute Script", "Action:"), "no action name"),
        (GOOD.replace("Fact Check:", "Facts:"), "missing section(s): 'Fact Check:'"),
        (
            GOOD.replace("Reflection:", "Note:").replace("Thought:", "Idea:"),
            "'Reflection:', 'Thought:'",
        ),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(ResponseParseError) as info:
        parse_response(text)
    assert message in str(info.value)


# --------------------------------------------------------------------------- solve
def test_solve_response_variants() -> None:
    assert parse_solve_response("Plan: fit a forest\n\n```python\nprint(1)\n```\n") == (
        "fit a forest",
        "print(1)\n",
    )
    assert parse_solve_response("Plan: x\n```\nprint(2)\n```") == ("x", "print(2)\n")
    assert parse_solve_response("Plan: x\n```python\nprint(3)\n") == ("x", "print(3)\n")
    assert parse_solve_response("**Plan:** two\nsteps\n```py\na = 1\n```\nDone.") == (
        "two\nsteps",
        "a = 1\n",
    )
    assert parse_solve_response("I will do it.\n```python\nb = 2\n```") == (
        "I will do it.",
        "b = 2\n",
    )
    two = "Plan: p\n```bash\nls\n```\n```python\nc = 3\n```"
    assert parse_solve_response(two) == ("p", "c = 3\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty response"),
        ("Plan: just words", "no code block found"),
        ("Plan: p\n```python\n\n```", "block is empty"),
    ],
)
def test_solve_errors(text: str, message: str) -> None:
    with pytest.raises(ResponseParseError) as info:
        parse_solve_response(text)
    assert message in str(info.value)


# ------------------------------------------------------------------------ grammars
def test_grammar_shape() -> None:
    g = response_grammar(ACTIONS, max_section_chars=300)
    assert '"Edit Script (AI)"' in g and "{1,300}" in g
    assert '"\\"script_name\\"" ws ":" ws string-100 ' in g  # a name: the short bound
    assert '"\\"edit_instruction\\"" ws ":" ws string-800 ' in g
    assert '"\\"k\\"" ws ":" ws (integer | null)' in g
    assert "boolean" in g and "number" in g
    assert '"\\"start_line_number\\"" ws ":" ws integer' in g
    assert 'act-12 ::= "Validate" "\\nAction Input: " "{" ws "}"' in g
    with pytest.raises(ValueError):
        response_grammar([])


@pytest.fixture(scope="module")
def smol():
    from mlagent_tui.core.llm.local import LocalModel

    model = LocalModel(n_ctx=2048)
    yield model
    model.close()


def test_grammars_compile_in_llama_cpp(smol) -> None:  # noqa: ANN001
    from llama_cpp import LlamaGrammar

    from mlagent_tui.core.llm.base import ModelError

    for grammar in (response_grammar(ACTIONS), response_grammar(ACTIONS[:1], 50), solve_grammar()):
        LlamaGrammar.from_string(grammar, verbose=False)  # only stores the text ...
        assert smol.compile_grammar(grammar)  # ... llama.cpp really parses it here
    with pytest.raises(ModelError, match="Undefined rule"):
        smol.compile_grammar('root ::= "a" missing-rule')


def test_smollm_output_through_grammar_parses(smol) -> None:  # noqa: ANN001
    from mlagent_tui.core.llm.base import Message

    # with max_tokens = the grammar's longest response, every answer completes
    bounds = dict(max_section_chars=60, max_value_chars=60, max_name_chars=30)
    grammar = response_grammar(ACTIONS, **bounds)
    budget = response_max_tokens(ACTIONS, **bounds)
    system = Message(
        role="system",
        content="You are a research agent. Answer with Reflection, Research Plan and Status, "
        "Fact Check, Thought, Action and Action Input (JSON). Actions: " + ", ".join(NAMES),
    )
    tasks = ["Improve train.py on the iris data.", "List the files.", "Check the score."]
    for i, task in enumerate(tasks):
        c = smol.complete(
            [system, Message(role="user", content=task)],
            grammar=grammar,
            max_tokens=budget,
            temperature=0.7 if i else 0.0,
        )
        assert c.finish_reason == "stop", c.text
        r = parse_response(c.text, known_actions=NAMES)
        assert r.action in NAMES
        fields = list(dict(ACTIONS)[r.action].model_fields)
        assert list(r.action_input) == fields
    c = smol.complete(
        [Message(role="user", content="Write a script printing 42.")],
        grammar=solve_grammar(max_plan_chars=100, max_plan_lines=2),
        max_tokens=120,
        temperature=0.0,
    )
    assert c.text.startswith("Plan: ")
    if c.finish_reason == "stop":
        plan, script = parse_solve_response(c.text)
        assert plan and script.strip()
