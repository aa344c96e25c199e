"""Grader for house-prices: RMSE of the predicted price (in $1000s), lower is better."""

import numpy as np

from mlagent_tui.taskkit import load_answers, load_csv_submission, run_grader


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["price"], answers=answers)
    err = sub["price"].to_numpy(dtype=float) - answers["price"].to_numpy(dtype=float)
    with np.errstate(over="ignore"):  # absurd values give inf, reported as invalid
        return float(np.sqrt(np.mean(err**2)))


if __name__ == "__main__":
    run_grader(grade)
