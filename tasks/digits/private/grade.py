"""Grade a digits submission: accuracy of the `label` column."""

import numpy as np

from mlagent_tui.taskkit import (
    SubmissionError,
    load_answers,
    load_csv_submission,
    run_grader,
)


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["label"], answers=answers)
    pred = sub["label"].to_numpy(dtype=float)
    if not np.all(pred == np.round(pred)):
        raise SubmissionError("column 'label' must hold whole numbers 0-9")
    return float(np.mean(pred.astype(np.int64) == answers["label"].to_numpy(dtype=np.int64)))


if __name__ == "__main__":
    run_grader(grade)
