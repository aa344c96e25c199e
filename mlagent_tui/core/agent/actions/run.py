"""Actions that run things: scripts, the grader, an extra model call, the memory."""

from __future__ import annotations

import re

from pydantic import BaseModel

from ...events import ExecFinished, ScoreRecorded
from ...llm import Message, ModelError
from ..calls import call_model
from .files import ScriptNameInput, read_text
from .registry import ActionContext, ActionError, Observation, action

UNDERSTAND_CHUNK_CHARS = 6_000
UNDERSTAND_MAX_CHUNKS = 3
SOLUTION_FILE = "solution.py"


class EmptyInput(BaseModel):
    pass


class FinalAnswerInput(BaseModel):
    final_answer: str = ""


class UnderstandInput(BaseModel):
    file_name: str
    things_to_look_for: str


class EditScriptInput(BaseModel):
    script_name: str
    edit_instruction: str
    save_name: str


class EditSegmentInput(BaseModel):
    script_name: str
    start_line_number: int
    end_line_number: int
    edit_instruction: str
    save_name: str


class MemoryWriteInput(BaseModel):
    content: str


class MemoryReadInput(BaseModel):
    query: str


class SolutionInput(BaseModel):
    content: str


# -- execution and grading ---------------------------------------------------------------
def execute(ctx: ActionContext, script: str) -> tuple[str, bool]:
    rel = ctx.workspace.normalize(script)
    if ctx.workspace.kind(rel) not in ("file", "link"):  # a link is followed in the sandbox
        raise ActionError(f"script {script} does not exist")
    limits = ctx.task.spec.limits
    disk_mb = limits.disk_mb
    res = ctx.executor.run(
        ["python", rel],
        cwd=ctx.workspace.root,
        timeout_s=limits.exec_timeout_s,
        mem_mb=limits.mem_mb,
        on_output=ctx.on_output,
        disk_mb=disk_mb,
        read_only=ctx.task.spec.read_only,
    )
    if ctx.on_output is not None and hasattr(ctx.on_output, "flush"):
        ctx.on_output.flush()
    ctx.record(ExecFinished.of(res))
    status = f"exit code {res.exit_code}, {res.duration_s:.1f} s"
    if res.killed_reason == "timeout":
        status = f"killed: time limit of {limits.exec_timeout_s:.0f} s reached"
    elif res.killed_reason == "disk":
        status = f"killed: disk limit reached (the workspace may hold at most {disk_mb} MB)"
    elif res.killed_reason == "memory":
        status = f"killed: memory limit reached ({limits.mem_mb} MB, /tmp included)"
    elif res.killed_reason:
        status = f"killed: {res.killed_reason} limit reached"
    text = f"The script has been executed ({status}). Here is the output:\n{res.output}"
    return text, res.ok


def grade(ctx: ActionContext, split: str) -> Observation:
    task = ctx.task
    result = task.grade(
        ctx.workspace.root,
        ctx.private,
        "test" if split == "submit" else split,
        sandbox=ctx.executor.name,
    )
    medal, above = task.medal(result.score), task.above_median(result.score)
    ctx.record(
        ScoreRecorded(
            split=split,
            score=result.score,
            valid=result.valid,
            error=result.error,
            medal=medal,
            above_median=above,
        )
    )
    if not result.valid:
        return Observation(
            text=f"The submission {task.spec.submission.file} is not valid: {result.error}",
            ok=False,
            valid=False,
        )
    metric = task.spec.metric
    direction = "higher" if metric.higher_is_better else "lower"
    if split == "validate" and task.spec.validate_.mode == "format":
        return Observation(
            text="The submission is valid (this task only checks the format).",
            valid=True,
            score=result.score,
        )
    return Observation(
        text=f"{metric.name} = {result.score:.6g} ({direction} is better; the baseline scores "
        f"{task.spec.baseline.score:.6g}).",
        score=result.score,
        valid=True,
    )


@action(
    "Execute Script",
    "Use this to execute a python script. The output is returned.",
    ScriptNameInput,
    kind="exec",
)
def execute_script(ctx: ActionContext, args: ScriptNameInput) -> Observation:
    text, ok = execute(ctx, args.script_name)
    return Observation(text=text, ok=ok)


@action(
    "Validate",
    "Use this to score your current submission file on the validation split without ending "
    "the session.",
    EmptyInput,
    kind="exec",
)
def validate(ctx: ActionContext, args: EmptyInput) -> Observation:
    return grade(ctx, "validate")


FINAL_DESCRIPTION = (
    "Use this only when you are done: your submission file is graded on the held-out test split "
    "and the session ends."
)


@action("Final Answer", FINAL_DESCRIPTION, FinalAnswerInput, kind="final")
def final_answer(ctx: ActionContext, args: FinalAnswerInput) -> Observation:
    obs = grade(ctx, "submit")
    return obs.model_copy(update={"ends_session": True})


@action("Submit", FINAL_DESCRIPTION, EmptyInput, kind="final", hidden=True)
def submit(ctx: ActionContext, args: EmptyInput) -> Observation:
    return final_answer(ctx, FinalAnswerInput())


# -- actions backed by one extra model call --------------------------------------------------
def ask_model(ctx: ActionContext, prompt: str, purpose: str, max_tokens: int = 1024) -> str:
    if ctx.model is None:
        raise ActionError("this action needs a model, and the session has none")
    try:
        out = call_model(
            ctx.model,
            [Message(role="user", content=prompt)],
            ctx.record,
            purpose=purpose,
            max_tokens=max_tokens,
            temperature=0.2,
        )
    except ModelError as exc:
        raise ActionError(f"the model call for this action failed: {exc}") from exc
    return out.text


@action(
    "Understand File",
    "Use this to read the whole file and understand certain aspects. Give a short description "
    "of what to look for and what should be returned.",
    UnderstandInput,
    kind="llm",
)
def understand_file(ctx: ActionContext, args: UnderstandInput) -> Observation:
    text = read_text(ctx, args.file_name, limit=4 * UNDERSTAND_CHUNK_CHARS * UNDERSTAND_MAX_CHUNKS)
    size = UNDERSTAND_CHUNK_CHARS
    chunks = [text[i : i + size] for i in range(0, len(text), size)][:UNDERSTAND_MAX_CHUNKS] or [""]
    answers = []
    for n, chunk in enumerate(chunks, 1):
        prompt = (
            f"Given this (partial) file from character {(n - 1) * size}:\n{chunk}\n\n"
            f"Look for: {args.things_to_look_for}\nDescribe only what is in this segment; "
            "do not guess the rest."
        )
        answers.append(ask_model(ctx, prompt, "understand_file"))
    cut = "" if len(text) <= size * len(chunks) else " (only the start of the file was read)"
    return Observation(text="\n\n".join(answers) + cut)


_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|\Z)", re.S)


def extract_code(text: str) -> str:
    match = _CODE.search(text)
    code = match.group(1) if match else text
    if not code.strip():
        raise ActionError("the edit produced no code")
    return code.rstrip() + "\n"


def _edit_prompt(script: str, instruction: str) -> str:
    return (
        f"Given this python script:\n```python\n{script}\n```\n"
        f"Edit the script by following the instruction:\n{instruction}\n"
        "Provide the full code after the edit, making no other changes. "
        "Start the python code with ```python."
    )


def _save_edit(ctx: ActionContext, save_name: str, new: str) -> Observation:
    edit = ctx.workspace.write(save_name, new)
    diff = ctx.workspace.diff_objects(edit.path, edit.before_hash, edit.after_hash)
    return Observation(
        text=f"The edited file is saved to {save_name}. Here is the diff, please check if the "
        f"edit is correct and desirable:\n\n{diff or '(no change)'}"
    )


@action(
    "Edit Script (AI)",
    "Use this to have an AI edit a python script by following an instruction; the result is "
    "saved to save_name and the diff is returned. An empty or new script_name creates a file.",
    EditScriptInput,
    kind="llm",
)
def edit_script(ctx: ActionContext, args: EditScriptInput) -> Observation:
    exists = bool(args.script_name.strip()) and ctx.workspace.kind(args.script_name) is not None
    script = read_text(ctx, args.script_name) if exists else ""
    ctx.workspace.resolve(args.save_name, for_write=True)
    reply = ask_model(ctx, _edit_prompt(script, args.edit_instruction), "edit_script", 2048)
    return _save_edit(ctx, args.save_name, extract_code(reply))


@action(
    "Edit Script Segment (AI)",
    "Like Edit Script (AI) but only for the lines start_line_number..end_line_number.",
    EditSegmentInput,
    kind="llm",
)
def edit_segment(ctx: ActionContext, args: EditSegmentInput) -> Observation:
    lines = read_text(ctx, args.script_name).splitlines()
    start, end = max(args.start_line_number, 1), min(args.end_line_number, len(lines))
    if end < start:
        raise ActionError(f"no lines {args.start_line_number}-{args.end_line_number} in the file")
    ctx.workspace.resolve(args.save_name, for_write=True)
    segment = "\n".join(lines[start - 1 : end])
    reply = ask_model(ctx, _edit_prompt(segment, args.edit_instruction), "edit_script", 2048)
    new = lines[: start - 1] + extract_code(reply).rstrip("\n").splitlines() + lines[end:]
    return _save_edit(ctx, args.save_name, "\n".join(new) + "\n")


# -- memory -----------------------------------------------------------------------------------
@action(
    "Memory Write",
    "Use this to save a note (a finding, a number, a failed idea) to read back later; "
    "#tags in the note help.",
    MemoryWriteInput,
    kind="memory",
)
def memory_write(ctx: ActionContext, args: MemoryWriteInput) -> Observation:
    if not args.content.strip():
        raise ActionError("an empty note is not saved")
    note = ctx.memory.write(args.content, ctx.step)
    return Observation(text=f"Saved note {len(ctx.memory.notes)} (tags: {', '.join(note.tags)}).")


@action(
    "Memory Read",
    "Use this to read back the notes most related to a query.",
    MemoryReadInput,
    kind="memory",
)
def memory_read(ctx: ActionContext, args: MemoryReadInput) -> Observation:
    hits = ctx.memory.read(args.query)
    if not hits:
        return Observation(text="No notes saved yet.")
    return Observation(
        text="\n".join(f"[step {n.step}, similarity {s:.2f}] {n.content}" for s, n in hits)
    )


# -- the solve agent's composite step (hidden from the research agent) ----------------------
@action(
    "Run Solution",
    "Write solution.py, execute it and validate the submission.",
    SolutionInput,
    kind="exec",
    hidden=True,
)
def run_solution(ctx: ActionContext, args: SolutionInput) -> Observation:
    ctx.workspace.write(SOLUTION_FILE, args.content)
    text, ok = execute(ctx, SOLUTION_FILE)
    if not ok:
        return Observation(text=text, ok=False)
    graded = grade(ctx, "validate")
    return graded.model_copy(update={"text": f"{text}\n\nValidation: {graded.text}"})
