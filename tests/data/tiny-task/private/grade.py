from mlagent_tui.taskkit import load_answers, load_csv_submission, run_grader


def grade(submission, answers_dir, split):
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["y"], answers=answers)
    return float((sub["y"] - answers["y"]).abs().mean())


if __name__ == "__main__":
    run_grader(grade)
