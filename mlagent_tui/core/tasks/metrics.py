"""Metrics for graders, numpy only: the same numbers on the host and in the sandbox image.

Each takes the true values first and the submission's second (array-likes of equal length) and
returns a float. `mlagent_tui.taskkit` re-exports them; scikit-learn gives the same values
(roc_auc = roc_auc_score, macro_f1 = f1_score(average="macro"), log_loss with clipping).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["accuracy", "log_loss", "macro_f1", "mae", "rmse", "roc_auc", "smape"]


def _pair(truth: Any, pred: Any) -> tuple[np.ndarray, np.ndarray]:
    t, p = np.asarray(truth), np.asarray(pred)
    if t.shape != p.shape or t.ndim != 1 or len(t) == 0:
        raise ValueError(f"truth and prediction must be 1-d, non-empty, equal: {t.shape} {p.shape}")
    return t, p


def accuracy(truth: Any, pred: Any) -> float:
    """Fraction of exact matches (labels compared as they are: ints, strings)."""
    t, p = _pair(truth, pred)
    return float(np.mean(t == p))


def mae(truth: Any, pred: Any) -> float:
    """Mean absolute error (lower is better)."""
    t, p = _pair(truth, pred)
    with np.errstate(over="ignore"):  # an absurd value gives inf, which run_grader refuses
        return float(np.mean(np.abs(p.astype(float) - t.astype(float))))


def rmse(truth: Any, pred: Any) -> float:
    """Root mean squared error (lower is better)."""
    t, p = _pair(truth, pred)
    with np.errstate(over="ignore"):
        return float(np.sqrt(np.mean((p.astype(float) - t.astype(float)) ** 2)))


def smape(truth: Any, pred: Any) -> float:
    """Symmetric mean absolute percentage error in percent, 0-200; two zeros count as 0."""
    t, p = _pair(truth, pred)
    t, p = t.astype(float), p.astype(float)
    denom = np.abs(p) + np.abs(t)
    ratio = np.where(denom == 0, 0.0, 2 * np.abs(p - t) / np.where(denom == 0, 1, denom))
    return float(100 * np.mean(ratio))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    for s, e in zip(starts, ends, strict=True):  # ties share the mean of their ranks
        ranks[order[s:e]] = (s + e + 1) / 2.0
    return ranks


def roc_auc(truth: Any, pred: Any) -> float:
    """Area under the ROC curve of scores `pred` for 0/1 labels `truth` (ties count half)."""
    t, p = _pair(truth, pred)
    labels = t.astype(int)
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("the answers hold a single class; ROC AUC is undefined")
    ranks = _average_ranks(p.astype(float))
    return float((ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def macro_f1(truth: Any, pred: Any) -> float:
    """F1 averaged over the classes present in the truth or the prediction (higher is better)."""
    t, p = _pair(truth, pred)
    scores = []
    for c in np.unique(np.concatenate([t, p])):
        tp = float(np.sum((p == c) & (t == c)))
        fp = float(np.sum((p == c) & (t != c)))
        fn = float(np.sum((p != c) & (t == c)))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


def log_loss(truth: Any, pred: Any, eps: float = 1e-15) -> float:
    """Binary cross-entropy of probabilities `pred` for 0/1 labels `truth`, clipped to eps."""
    t, p = _pair(truth, pred)
    prob = np.clip(p.astype(float), eps, 1 - eps)
    y = t.astype(float)
    return float(-np.mean(y * np.log(prob) + (1 - y) * np.log(1 - prob)))
