"""A grader of the first contract: its own parser takes exactly the three flags it was promised,
and it imports the grading helpers by their first name, mlagent_tui.core.grading."""

import argparse
import json
from pathlib import Path

from mlagent_tui.core.grading import SubmissionError, load_answers, load_csv_submission

parser = argparse.ArgumentParser()
parser.add_argument("--submission", type=Path, required=True)
parser.add_argument("--answers", type=Path, required=True)
parser.add_argument("--split", choices=["validate", "test"], required=True)
args = parser.parse_args()
try:
    answers = load_answers(args.answers, args.split)
    sub = load_csv_submission(args.submission, id_column="id", columns=["y"], answers=answers)
    err = (sub["y"] - answers["y"]).abs().mean()
    print(json.dumps({"score": float(err), "valid": True, "error": None}))
except SubmissionError as exc:
    print(json.dumps({"score": None, "valid": False, "error": str(exc)}))
