"""A grader of contract 2 with a parser of its own: --sandbox is required, as contract 2 promises
it; the helpers come from mlagent_tui.taskkit."""

import argparse
import json
from pathlib import Path

from mlagent_tui.taskkit import SubmissionError, load_answers, load_csv_submission, mae

parser = argparse.ArgumentParser()
parser.add_argument("--submission", type=Path, required=True)
parser.add_argument("--answers", type=Path, required=True)
parser.add_argument("--split", choices=["validate", "test"], required=True)
parser.add_argument("--sandbox", choices=["local", "docker"], required=True)
args = parser.parse_args()
try:
    answers = load_answers(args.answers, args.split)
    sub = load_csv_submission(args.submission, id_column="id", columns=["y"], answers=answers)
    score = mae(answers["y"], sub["y"])
    print(json.dumps({"score": score, "valid": True, "error": None}))
except SubmissionError as exc:
    print(json.dumps({"score": None, "valid": False, "error": str(exc)}))
