# The two commands of the README: `make run` and `make test`.
VENV   ?= .venv
PYTHON ?= python3
STAMP  := $(VENV)/.installed
# llama.cpp built for -march=native uses AMX tiles where the CPU has them, and its AMX matmul
# crashes (SIGSEGV in ggml_backend_amx_mul_mat) on this project's VMs: build it portable (AVX2).
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: run test setup system image lint bench adapter clean

run: setup  ## set up and start mlagent on its embedded defaults
	$(VENV)/bin/mlagent --task breast-cancer --model local --agent search

test: setup system image lint  ## set up everything and run the whole test suite
	MLAGENT_REQUIRE_DOCKER=1 $(VENV)/bin/python -m pytest -q -p no:cacheprovider

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(VENV)/bin/pip install -q -e '.[dev,train,scale]'
	touch $(STAMP)

system:  ## system packages, a running dockerd
	bash scripts/system-setup.sh

image: setup system  ## the docker sandbox image, built offline once and reused
	$(VENV)/bin/mlagent sandbox build --offline

lint: setup
	$(VENV)/bin/ruff check mlagent_tui trainer tests benchmarks
	$(VENV)/bin/lint-imports

adapter: setup  ## rebuild the shipped adapter from scratch on the CPU (40 minutes on the AMD VM; more on slower ones)
	rm -rf build/adapter
	$(VENV)/bin/python benchmarks/learning_curve.py --work build/adapter --ship

bench: setup
	$(VENV)/bin/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) sessions/mlagent.db* sessions/workspaces sessions/private sessions/snapshots
