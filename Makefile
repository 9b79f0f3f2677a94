# faasgd: `make run` trains a real job, `make test` runs the whole suite. Both install what is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: run test test-unit lint docs bench deps debian docker-ready clean

deps: debian $(VENV)/.installed

debian:
	@scripts/ensure-debian-packages.sh

# The container tests' Docker (test only: `make run` needs none): Debian's docker.io, debootstrap and docker-registry,
# dockerd started when none answers, the template's base images when missing. Never fails: without Docker it writes
# why to build/docker-unavailable and the Docker tests skip with that reason.
docker-ready:
	@scripts/ensure-docker.sh

# The bench extra too, so tests/integration/test_peers_torch.py runs bench/peers.py's torch rows instead of skipping:
# torch==2.13.0 installed in 12 s here from the CPU wheel this machine keeps (pylibmc, the extra's other wheel, 1 s),
# under the 60 s worth paying. Where pip can reach only PyPI, that pin is PyTorch's CUDA build (GBs): there, install
# torch from https://download.pytorch.org/whl/cpu first, or drop `bench` here and the test skips, saying so.
$(VENV)/.installed: pyproject.toml | debian
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,bench]'  # dev = every wing's extra + the test tools; bench: see above
	@touch $@

run: deps
	$(VENV)/bin/faasgd train --workers 2 --dataset fashion-mnist --target-accuracy 0.85

# Two phases (docs/how-to/run-tests.md says what each costs). First unit, e2e and integration two at a time, a file's
# tests in one process (its module fixtures built once; each process starts the session's real servers of its own, on
# free ports). Then, alone, the tests marked `serial`: those that time calls against deadlines, kill and pause, or read
# the machine's CPU (a neighbour on the 2 cores would move their clocks), the real watchdog and faas-cli, and the
# container tests (tests/docker, when there), which skip with docker-ready's reason when Docker is not available.
test: deps docker-ready lint docs
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15 -m "not serial" tests/unit tests/e2e tests/integration
	$(PY) -m pytest -q --durations=15 -m serial tests/integration tests/e2e tests/openfaas $(wildcard tests/docker)

lint: deps  # pyflakes' rules over the whole tree ([tool.ruff]), then the wings' import rules ([tool.importlinter])
	$(VENV)/bin/ruff check --no-cache .
	$(VENV)/bin/lint-imports --no-cache

# The docs site must build: a broken link or anchor, a page missing from the nav or a configuration key without a
# description fails it (mkdocs.yml's validation, --strict). Built into a temporary folder, removed after.
docs: deps
	@site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $$site; \
	status=$$?; rm -rf $$site; exit $$status

test-unit: deps
	$(PY) -m pytest -q tests/unit

bench: deps
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) bench/throughput.py
	$(PY) bench/push_cost.py
	$(PY) bench/efficiency.py
	$(PY) bench/node_local.py
	$(PY) bench/invocation.py
	$(PY) bench/peers.py
	$(PY) bench/updown.py
	$(PY) bench/scaling.py
	$(PY) bench/scaling.py --global-batch 128 --out results/scaling-global-batch
	$(PY) bench/batch_bound.py --seeds 5 --product
	$(PY) bench/faults.py
	$(PY) bench/stacking.py
	$(PY) bench/codecs.py
	$(PY) bench/big_dataset.py
	$(PY) bench/memcached_protocol.py
	$(PY) bench/stores.py
	$(PY) bench/store_scaling.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info src/*.egg-info
