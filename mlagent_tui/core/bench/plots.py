"""The bench's figures (matplotlib, Agg): performance profiles, AUP against cost, score over steps.

Every function takes plain data and a path, writes one PNG and returns the path, so `bench
report` re-renders the figures from the store and `bench aup` draws profiles of any table.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..safe_text import one_line  # noqa: E402
from .aup import BASELINE, AupResult  # noqa: E402

DPI = 110
_STYLES = ("-", "--", "-.", ":")


def short_name(method: str) -> str:
    """`replay:/long/path/a.jsonl` -> `replay:a.jsonl`; `local:/x/m.gguf` -> `local:m.gguf`."""
    if ":" in method and method.split(":", 1)[0] in ("replay", "local"):
        kind, target = method.split(":", 1)
        return f"{kind}:{Path(target).name}"
    return method


def label(text: str) -> str:
    """A name as a figure shows it: one line, its controls visible, and `$` never starting
    mathtext (a task's name may be a model's text; `$\\frac{$` would stop the figure)."""
    return one_line(text).replace("$", r"\$")


def _taus(result: AupResult) -> list[float]:
    """Every point where a profile can step (on the result's axis), plus both ends of it."""
    points = {result.start, result.tau_max}
    for per_task in result.ratios.values():
        points.update(x for x in map(result.axis, per_task.values()) if x <= result.tau_max)
    return sorted(points)


def _data_end(result: AupResult, taus: list[float]) -> float:
    """Where the x-axis ends: a little past the last step any profile takes, not the far end
    of the AUP's range (with one model the profiles are flat long before tau_max)."""
    span = max(result.tau_max - result.start, 1e-9)
    inner = [t for t in taus if result.start < t < result.tau_max]
    if not inner:
        return result.start + 0.25 * span
    last = max(inner)
    return min(result.tau_max + 0.02 * span, last + max(0.15 * (last - result.start), 0.02 * span))


def draw_profiles(ax, result: AupResult, title: str) -> None:  # noqa: ANN001
    """Step plots of rho_m(tau) for every method of `result` on one matplotlib Axes."""
    taus = _taus(result)
    for i, method in enumerate(result.methods):
        ys = result.profile(method, taus)
        name = f"{label(short_name(method))} (AUP {result.aup[method]:.3f})"
        ax.step(
            taus,
            ys,
            where="post",
            label=name,
            linewidth=2,
            linestyle=_STYLES[i % len(_STYLES)],
            color="grey" if method == BASELINE else None,
        )
    right = _data_end(result, taus)
    ax.set_xlim(result.start - 0.02 * (right - result.start), right)
    if right < result.tau_max:
        ax.annotate(
            f"flat to tau = {result.tau_max:.3g}",
            (1, 0),
            xycoords="axes fraction",
            xytext=(-4, 4),
            textcoords="offset points",
            ha="right",
            fontsize=7,
            color="grey",
        )
    ax.set_ylim(-0.03, 1.03)
    if result.definition == "mlgym":
        ax.set_xlabel(r"$\tau$ = log$_{10}$ of the ratio to the best method on a task")
    else:
        ax.set_xlabel(r"$\tau$ (ratio to the best method on a task)")
    ax.set_ylabel(r"$\rho(\tau)$ = share of tasks with ratio $\leq \tau$")
    ax.set_title(title)
    ax.grid(True, alpha=0.4)
    ax.legend(loc="lower right", fontsize=8)


def plot_profiles(results: dict[str, AupResult], path: Path) -> Path:
    """One panel per score kind (e.g. best attempt, best submission)."""
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5), squeeze=False)
    for ax, (title, result) in zip(axes[0], results.items(), strict=True):
        draw_profiles(ax, result, f"Performance profile: {title}")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_aup_vs_cost(
    aup: dict[str, dict[str, float]],
    cost: dict[str, float],
    tokens: dict[str, float],
    path: Path,
) -> Path:
    """AUP of each model against its mean cost per run (left) and mean tokens per run (right).

    `aup` maps a score kind to {model: AUP}; the baseline (no cost) is drawn as a line.
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    styles = ({"marker": "o", "s": 50}, {"marker": "s", "s": 150, "facecolors": "none"})
    tops = [v for values in aup.values() for v in values.values()]
    for ax, (xs, xlabel) in zip(
        axes, ((cost, "mean cost per run (USD)"), (tokens, "mean tokens per run")), strict=True
    ):
        labelled: set[str] = set()
        if not any(xs.values()):  # local and replay models cost nothing: no dot at 0
            what = "cost" if xs is cost else "token count"
            ax.text(0.5, 0.5, f"no {what} recorded", transform=ax.transAxes, ha="center")
            ax.set_xlabel(xlabel)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        for k, (kind, values) in enumerate(aup.items()):
            models = [m for m in values if m != BASELINE]
            style = dict(styles[k % len(styles)])
            if "facecolors" in style:
                style["edgecolors"] = f"C{k}"
            else:
                style["color"] = f"C{k}"
            ax.scatter(
                [xs[m] for m in models],
                [values[m] for m in models],
                label=f"AUP {kind.replace('_', ' ')}",
                zorder=3,
                linewidths=1.5,
                **style,
            )
            for m in models:
                if m not in labelled:
                    labelled.add(m)
                    ax.annotate(
                        label(short_name(m)),
                        (xs[m], values[m]),
                        textcoords="offset points",
                        xytext=(8, -12),
                        fontsize=8,
                    )
            if BASELINE in values:
                ax.axhline(values[BASELINE], color=f"C{k}", linestyle=":", linewidth=1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("AUP")
        ax.grid(True, alpha=0.4)
        right = max([*xs.values(), 0.0])
        ax.set_xlim(-0.05 * right, right * 1.3)
        ax.set_ylim(-0.05 * (max(tops, default=0) or 1), (max(tops, default=0) or 1) * 1.15)
        ax.legend(loc="best", fontsize=8)
    axes[0].set_title("AUP against cost (dotted: the baseline's AUP)", fontsize=10)
    axes[1].set_title("AUP against tokens", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_score_over_steps(
    curves: dict[str, dict[str, list[float]]],
    tasks: dict[str, dict],
    path: Path,
) -> Path:
    """Per task, each model's mean best-so-far validate score by step, the baseline dashed.

    `curves`: task -> model -> mean best-so-far per step (nan where no run had a score yet);
    `tasks`: task -> {metric, higher_is_better, baseline, thresholds}.
    """
    names = list(curves)
    cols = min(3, max(1, len(names)))
    rows = math.ceil(len(names) / cols) if names else 1
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.flat[len(names) :]:
        ax.axis("off")
    for ax, task in zip(axes.flat, names, strict=False):
        info = tasks[task]
        longest = 1
        for i, (model, ys) in enumerate(curves[task].items()):
            steps = list(range(1, len(ys) + 1))
            longest = max(longest, len(ys))
            ax.plot(
                steps,
                ys,
                marker="o",
                markersize=4,
                linestyle=_STYLES[i % len(_STYLES)],
                label=label(short_name(model)),
            )
        ax.axhline(info["baseline"], color="grey", linestyle="--", linewidth=1, label="baseline")
        for level, color in (("median", "tab:olive"), ("gold", "goldenrod")):
            value = info["thresholds"].get(level)
            if value is not None:
                ax.axhline(value, color=color, linestyle=":", linewidth=1, label=level)
        arrow = "higher is better" if info["higher_is_better"] else "lower is better"
        ax.set_title(label(task))
        ax.set_xlabel("step")
        ax.set_ylabel(f"best validate {info['metric']} ({arrow})", fontsize=8)
        ax.set_xlim(0.5, longest + 0.5)
        if all(math.isnan(y) for ys in curves[task].values() for y in ys):
            ax.text(
                0.5,
                0.6,
                "no run has a validated score yet",
                transform=ax.transAxes,
                ha="center",
                color="grey",
            )
        ax.grid(True, alpha=0.4)
        ax.legend(loc="best", fontsize=7)
    fig.suptitle("Best validate score so far, mean over runs")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
