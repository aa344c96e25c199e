"""Run every benchmark script in turn."""

import runpy
from pathlib import Path

for name in (
    "bench_store",
    "bench_executor",
    "bench_agent_step",
    "bench_changes",
    "bench_local_model",
    "bench_grammar_parse",
    "bench_tui",
    "bench_baselines",
    "bench_harness",
    "bench_rollout",
    "bench_export",
):
    print(f"== {name}")
    runpy.run_path(str(Path(__file__).with_name(f"{name}.py")), run_name="__main__")
