"""Grader for diabetes: mean absolute error of the predicted progression, lower is better."""

import numpy as np

from mlagent_tui.taskkit import load_answers, load_csv_submission, run_grader


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["progression"], answers=answers)
    err = sub["progression"].to_numpy(dtype=float) - answers["progression"].to_numpy(dtype=float)
    with np.errstate(over="ignore"):  # absurd values give inf, reported as invalid
        return float(np.mean(np.abs(err)))


if __name__ == "__main__":
    run_grader(grade)
