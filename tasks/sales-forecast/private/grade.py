"""Grade a sales-forecast submission: SMAPE (in percent, lower is better) of the `sales` column."""

import numpy as np

from mlagent_tui.taskkit import load_answers, load_csv_submission, run_grader


def smape(forecast, actual):
    """Symmetric mean absolute percentage error, 0-200; a pair of zeros counts as a perfect 0."""
    denom = np.abs(forecast) + np.abs(actual)
    ratio = np.where(
        denom == 0, 0.0, 2 * np.abs(forecast - actual) / np.where(denom == 0, 1, denom)
    )
    return float(100 * np.mean(ratio))


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["sales"], answers=answers)
    return smape(sub["sales"].to_numpy(dtype=float), answers["sales"].to_numpy(dtype=float))


if __name__ == "__main__":
    run_grader(grade)
