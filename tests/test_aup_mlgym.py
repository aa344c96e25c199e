"""`bench aup` against MLGym's released score and AUP tables (tests/data/mlgym, published numbers).

Every published AUP must come back within 0.002 from the published score tables (themselves
rounded to three decimals), both tables of a release on one shared tau axis.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

DATA = ROOT / "tests" / "data" / "mlgym"
# release -> tau_max to pass (None: the default rule). v1 (the paper's first version) rounded
# tau_max up to a whole number, later releases to one decimal.
RELEASES = {"v1": 2.0, "v2": None, "v3": None}


def bench_aup(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    proc = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "bench", "aup", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def published(release: str) -> dict[str, dict[str, float]]:
    """{best_scores.csv | last_scores.csv: {method: AUP}} as MLGym released them."""
    with (DATA / f"{release}_aup_scores.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    return {
        f"{release}_best_scores.csv": {r["Model"]: float(r["Best AUP"]) for r in rows},
        f"{release}_last_scores.csv": {r["Model"]: float(r["Last AUP"]) for r in rows},
    }


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_every_published_aup_comes_back(release: str) -> None:
    tables = [DATA / f"{release}_{kind}_scores.csv" for kind in ("best", "last")]
    args = [a for t in tables for a in ("--scores", str(t))]
    if RELEASES[release] is not None:
        args += ["--tau-max", str(RELEASES[release])]
    out = json.loads(bench_aup(*args, "--json").stdout)
    assert out["definition"] == "mlgym" and out["grid_points"] == 500
    assert out["tau_max"] == pytest.approx(RELEASES[release] or 1.2)
    expected = published(release)
    assert set(out["tables"]) == set(expected)
    for name, aups in expected.items():
        got = out["tables"][name]["aup"]
        assert set(got) == set(aups)
        for method, value in aups.items():
            assert got[method] == pytest.approx(value, abs=0.002), (name, method)
        # Blotto's baseline (-0.248) is infeasible, said as such, not refused
        negative = [i for i in out["tables"][name]["infeasible"] if i["reason"] == "negative"]
        assert {"task": "Blotto", "method": "baseline", "score": -0.248, "reason": "negative"} in (
            negative
        )
    assert any("negative" in note for note in out["notes"])


def test_text_table_fits_100_columns_and_names_the_negative_scores(tmp_path: Path) -> None:
    tables = [DATA / f"v3_{kind}_scores.csv" for kind in ("best", "last")]
    proc = bench_aup(*(a for t in tables for a in ("--scores", str(t))), "--out", str(tmp_path))
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    text = proc.stdout
    assert "gemini-20-flash-thinking" in text and "…" not in text  # no name is cut
    assert "v3_best_scores.csv" in text and "v3_last_scores.csv" in text
    assert "negative: Blotto baseline -0.248, Mountain Car Continuous gpt4o2 -215.776" in text
    assert "log10(ratio) in [0, 1.2]" in text
    # ranked by the first table: gpt-o1 (1.145) first, the baseline (0.931) last
    rows = [line for line in lines if line.startswith("│")]
    assert "gpt-o1" in rows[0] and "baseline" in rows[-1]
    assert (tmp_path / "performance_profile.png").stat().st_size > 10_000


def test_linear_definition_is_kept_as_an_option() -> None:
    table = DATA / "v2_best_scores.csv"
    out = json.loads(bench_aup("--scores", str(table), "--definition", "linear", "--json").stdout)
    assert out["definition"] == "linear" and out["axis"] == "ratio"
    aup = out["tables"]["v2_best_scores.csv"]["aup"]
    ratios = out["tables"]["v2_best_scores.csv"]["ratios"]
    # exact: mean over tasks of tau_max - ratio, tau_max the largest ratio
    for method, value in aup.items():
        mean = sum(out["tau_max"] - r[method] for r in ratios.values()) / len(ratios)
        assert value == pytest.approx(mean)
    # the same ranking at the top as MLGym's definition, on another scale
    assert max(aup, key=aup.get) == "gpt-o1" and min(aup, key=aup.get) == "baseline"
