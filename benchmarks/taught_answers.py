"""How well a distil run's checkpoint gives the answers its sweep taught, token by token.

For each task the sweep taught (the run's `sweep.json`), the taught answer at its first seed is
scored under the checkpoint's policy: the answer's mean token loss, and each token the policy
gives less than `--below` probability with the token it would have written instead. A choice
that was not learned shows as one unlikely token where the answer leaves what the model copies
(breast-cancer's `worst_radius` after `mean_radius`, where the data's next column is
`mean_texture`), however low the answer's mean loss is.

    .venv/bin/python benchmarks/taught_answers.py --run RUN_FOLDER [--update N] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def checkpoint(run: Path, update: int | None) -> Path:
    """The run's checkpoint after `update` (None: its latest)."""
    folder = run / "checkpoints"
    if update is not None:
        return folder / f"update-{update:04d}"
    return folder / (run / "latest").read_text().strip()


def score(policy: Any, messages: list[dict[str, str]], response: str, below: float) -> dict:
    """The answer's token count, mean loss and its unlikely tokens (position, token, log-prob,
    the policy's own pick there)."""
    import torch

    from mlagent_tui.core.llm.base import Message
    from trainer.policy import token_logprobs
    from trainer.recipes.common import answer_ids

    prompt = policy.chat_prompt_ids([Message(**m) for m in messages])
    answer = answer_ids(policy, response)  # the ids distil trains on
    with torch.no_grad():
        ids = torch.tensor([prompt + answer[:-1]])
        logits = policy.model(input_ids=ids).logits[:, len(prompt) - 1 :]
        logprobs = token_logprobs(logits, torch.tensor([answer]))[0]
        picks = logits[0].argmax(-1).tolist()
    name = policy.tokenizer.convert_ids_to_tokens
    hard = [
        {"at": i, "token": name([t])[0], "logprob": round(float(lp), 2), "pick": name([p])[0]}
        for i, (t, lp, p) in enumerate(zip(answer, logprobs, picks, strict=True))
        if float(lp) < math.log(below)
    ]
    return {"tokens": len(answer), "mean_loss": round(float(-logprobs.mean()), 3), "hard": hard}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", type=Path, required=True, help="a distil run folder with sweep.json")
    p.add_argument("--update", type=int, default=None, help="its checkpoint (default: latest)")
    p.add_argument("--below", type=float, default=0.25, help="list tokens under this probability")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    sweep_file = a.run / "sweep.json"
    if not sweep_file.is_file():
        sys.exit(f"no sweep.json in {a.run}: run `mlagent-train run --recipe distil --rounds 1`")
    from trainer.policy import Policy

    where = checkpoint(a.run, a.update)
    policy = Policy.load(where, device="cpu", backend="hf", dtype="float32")
    steps = json.loads(sweep_file.read_text())["steps"]
    first: dict[str, dict] = {}
    for step in steps:
        first.setdefault(step["task"], step)
    out = {t: score(policy, s["messages"], s["response"], a.below) for t, s in first.items()}
    if a.json:
        print(json.dumps({"checkpoint": where.name, "tasks": out}, indent=2))
        return
    print(f"{where.name}: the sweep's taught answers (tokens under p = {a.below})")
    for task, got in out.items():
        marks = [f"{h['token']!r} {h['logprob']} (wrote {h['pick']!r})" for h in got["hard"]]
        hard = ", ".join(marks)
        print(f"{task}: {got['tokens']} tokens, mean loss {got['mean_loss']}; {hard or 'none'}")


if __name__ == "__main__":
    main()
