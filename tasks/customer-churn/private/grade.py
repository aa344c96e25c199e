"""Grader for customer-churn: ROC AUC of the churn scores, higher is better."""

from sklearn.metrics import roc_auc_score

from mlagent_tui.core.grading import load_answers, load_csv_submission, run_grader


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["churned"], answers=answers)
    return float(roc_auc_score(answers["churned"].to_numpy(), sub["churned"].to_numpy(dtype=float)))


if __name__ == "__main__":
    run_grader(grade)
