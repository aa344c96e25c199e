"""Grader for customer-churn: ROC AUC of the churn scores, higher is better.

The AUC is computed from ranks (Mann-Whitney U, ties counted half), which equals
sklearn.metrics.roc_auc_score and spares the grader the scikit-learn import.
"""

import numpy as np
import pandas as pd

from mlagent_tui.taskkit import load_answers, load_csv_submission, run_grader


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    labels = labels.astype(int)
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("the answers hold a single class; ROC AUC is undefined")
    ranks = pd.Series(scores).rank(method="average").to_numpy()
    return float((ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["churned"], answers=answers)
    return roc_auc(answers["churned"].to_numpy(), sub["churned"].to_numpy(dtype=float))


if __name__ == "__main__":
    run_grader(grade)
