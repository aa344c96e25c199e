"""Grader for breast-cancer: accuracy of the predicted class (1 = malignant), higher is better.

Each value must lie in [0, 1]; it is read as class 1 when it is at least 0.5, so a probability
works as well as a hard 0/1 label.
"""

import numpy as np

from mlagent_tui.taskkit import (
    SubmissionError,
    load_answers,
    load_csv_submission,
    run_grader,
)


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["target"], answers=answers)
    values = sub["target"].to_numpy(dtype=float)
    if ((values < 0) | (values > 1)).any():
        raise SubmissionError("column 'target' must hold 0 or 1 (or a probability in [0, 1])")
    pred = (values >= 0.5).astype(int)
    return float(np.mean(pred == answers["target"].to_numpy(dtype=int)))


if __name__ == "__main__":
    run_grader(grade)
