# The README's two commands: `make demo` (virtual rig, no hardware) and `make test` (whole suite).
# Both set up .venv from a Python >= 3.12 they find themselves (see .ci/find_python.sh).

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# pytest-xdist workers: each takes whole test files, the longest first (tests/file_seconds.json; xdist's own
# reorder, by test count, would override it). One per idle core plus one, never more than the cores, sampled
# when the suite starts (tests/support/worker_count.py; tests/README.md: measured on 2 cores).
TEST_WORKERS ?= $(shell $(PY) -m tests.support.worker_count)
PYTEST = $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: setup demo test test-fast lint bench figures clean

setup: $(STAMP)

$(STAMP): pyproject.toml .ci/find_python.sh
	@interp=$$(.ci/find_python.sh) || exit 1; \
	if [ ! -x $(PY) ]; then \
		echo "creating $(VENV) with $$interp"; \
		"$$interp" -m venv $(VENV) || { echo "error: could not create $(VENV) with $$interp (on Debian: apt-get install python3-venv)"; exit 1; }; \
	fi
	@echo "installing the project and LeRobot 0.6.1 into $(VENV) (first time: a few minutes, torch is large)"
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/so101-demo

test: $(STAMP)
	.ci/install_chromium.sh
	$(PYTEST)

# The inner loop: unit and contract tests, no end-to-end runs of the commands (`slow`).
test-fast: $(STAMP)
	.ci/install_chromium.sh
	$(PYTEST) -m "not slow and not hardware"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Every row against its anchor, sized for 20 minutes on 2 cores; `make bench LONG=1` for the long variants.
bench: $(STAMP)
	$(PY) -m benchmarks.run_all $(if $(LONG),--long)

# The README's pictures, from the output of `make demo` (run it first).
figures: $(STAMP)
	.ci/install_chromium.sh
	$(PY) -m benchmarks.readme_figures

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
