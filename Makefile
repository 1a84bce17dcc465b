# The one task runner: the README's commands and CI both come through here.
VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
QUESTION ?= What are the early warning signs of relapse, and what should we do?

.PHONY: app demo test lint bench results train artefacts screenshots clean

# Python keeps the bytecode it compiles (__pycache__) for the next start, unless the environment
# says not to (PYTHONDONTWRITEBYTECODE, set in many containers): then every one-shot `cafbot ask`
# compiled some 1,800 modules again, 2.5 s of its 6.3 s. What make runs may keep it.
unexport PYTHONDONTWRITEBYTECODE

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv installs: on 2 cores it takes seconds where pip took minutes, and it keeps the wheels it
# downloads (pip's cache stayed empty: the registry's answers are not cacheable), so the next clone
# installs from disk. pip stays the fallback where uv itself cannot be installed.
# uv reads no pip configuration, so the local wheel folders pip is pointed at are passed on: on
# these machines one holds torch's CPU build, without which uv would take PyPI's multi-GB CUDA one.
# $(1): what to install; $(2): options for uv only.
comma     := ,
PIP_LINKS  = $(wildcard $(sort $(shell $(BIN)/pip config list 2>/dev/null | sed -n "s/.*find-links='\(.*\)'/\1/p")))
install    = if [ -x $(BIN)/uv ] || $(BIN)/pip install -q -c constraints.txt uv; then \
	       $(BIN)/uv pip install --python $(BIN)/python $(2) \
	         $(addprefix --find-links ,$(PIP_LINKS)) -c constraints.txt $(1); \
	     else $(BIN)/pip install -q -c constraints.txt $(1); fi

# Runtime only: enough for the offline default. Python compiles the bytecode of what a start
# imports, a fraction of what is installed: compiling all of it first took a minute on 2 cores.
# One offline question, in a throwaway data dir, compiles what a turn imports, so that a first
# `cafbot ask` run from a shell that forbids writing bytecode finds it; it can only fail where
# the learned checks are stale, and then `make artefacts` says so.
$(VENV)/.installed-runtime: pyproject.toml constraints.txt | $(BIN)/python
	$(call install,-e .)
	scratch=$$(mktemp -d) && CAFBOT_DATA_DIR=$$scratch $(BIN)/cafbot ask --caf tier0 "What is clozapine?" \
	  > /dev/null 2>&1; rm -rf $$scratch
	touch $@

# Everything: tests, lint and the local llama.cpp server, built from source for a portable x86-64
# target: built for the machine's own CPU (llama.cpp's default), it died on its first completion
# on a VM whose CPU advertises AMX. Its wheel is built once per version and flags into a wheelhouse
# outside the clone (pip's own cache keys a built wheel by its source, not by these flags, so it
# could hand back a wheel built for another CPU); later installs, CI's fresh clones, take it there.
# Its bytecode is compiled at install, as pip did: the tests start many processes, and where
# PYTHONDONTWRITEBYTECODE is set each of them would compile what it imports again.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_VERSION    := $(shell sed -n 's/^llama_cpp_python==//p' constraints.txt)
LLAMA_WHEELS     ?= $(HOME)/.cache/cafbot/wheels/$(shell printf '%s' "$(LLAMA_CMAKE_ARGS)" | sha256sum | cut -c1-12)
$(VENV)/.installed-dev: pyproject.toml constraints.txt | $(BIN)/python
	ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl > /dev/null 2>&1 || \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip wheel -q --no-cache-dir --no-deps -w $(LLAMA_WHEELS) \
	    llama_cpp_python==$(LLAMA_VERSION)
	$(call install,--find-links $(LLAMA_WHEELS) --only-binary llama-cpp-python -e '.[dev$(comma)local]',--compile-bytecode)
	touch $@ $(VENV)/.installed-runtime

# The learned checks ship in the repository, checksummed: this verifies them and rebuilds only one
# whose training data or features changed (a deployment's own screen_training/, for example).
artefacts: $(VENV)/.installed-runtime
	$(BIN)/cafbot judges train --if-needed

# The chat in your browser, on the offline default (PORT=8501 HOST=127.0.0.1 to change).
PORT ?= 8501
HOST ?= 127.0.0.1
app: $(VENV)/.installed-runtime artefacts
	$(BIN)/cafbot ui --port $(PORT) --host $(HOST)

demo: $(VENV)/.installed-runtime artefacts
	$(BIN)/cafbot kb check
	$(BIN)/cafbot ask "$(QUESTION)"

test: $(VENV)/.installed-dev artefacts
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# Fit every learned check again on the train splits, whatever their state (seeded: the same data
# gives the same models), and write its artefact and model card. Run time only loads them.
train: $(VENV)/.installed-runtime
	$(BIN)/cafbot judges train
	$(BIN)/python -c 'from app.retrieval.examples import ship_default_fit; print("wrote", ship_default_fit())'
	$(BIN)/python -c 'from app.retrieval.shipped_vectors import ship_default_vectors; print("wrote", ship_default_vectors())'

# Every published figure: each evaluation's JSON into docs/results/, then docs/results.md and the
# README's table from them (app/evaluation/results.py lists the same commands).
results: $(VENV)/.installed-runtime artefacts
	$(BIN)/cafbot kb eval scenarios/retrieval/questions.jsonl --json docs/results/retrieval_dev.json
	$(BIN)/cafbot kb eval scenarios/retrieval/holdout.jsonl --json docs/results/retrieval_holdout.json
	$(BIN)/cafbot judges eval scenarios/screen/dev --tiers 0 --json docs/results/screen_dev.json
	$(BIN)/cafbot judges eval scenarios/screen/holdout --tiers 0 --json docs/results/screen_holdout.json
	$(BIN)/cafbot judges eval scenarios/screen/in_context/holdout --tiers 0 --json docs/results/screen_context_holdout.json
	$(BIN)/cafbot judges eval scenarios/judges/test --tiers 0 --json docs/results/judges_test.json
	$(BIN)/cafbot judges eval scenarios/judges/holdout --tiers 0 --json docs/results/judges_holdout.json
	$(BIN)/cafbot eval answers scenarios/answers/dev-mixed-questions.jsonl --json docs/results/answers_dev_mixed_questions.json
	$(BIN)/cafbot eval answers scenarios/answers/dev-mixed-questions-detailed.jsonl --json docs/results/answers_dev_mixed_questions_detailed.json
	$(BIN)/cafbot eval answers scenarios/answers/dev-mid-conversation.jsonl --json docs/results/answers_dev_mid_conversation.json
	$(BIN)/cafbot eval answers scenarios/answers/dev-own-case-vs-general.jsonl --json docs/results/answers_dev_own_case_vs_general.json
	$(BIN)/cafbot eval answers scenarios/answers/dev-own-case-requests.jsonl --json docs/results/answers_dev_own_case_requests.json
	$(BIN)/cafbot eval answers scenarios/answers/dev-requests-in-conversation.jsonl --json docs/results/answers_dev_requests_in_conversation.json
	$(BIN)/cafbot eval answers scenarios/answers/holdout-mixed-questions.jsonl --json docs/results/answers_holdout_mixed_questions.json
	$(BIN)/cafbot eval answers scenarios/answers/holdout-mixed-questions-from-sources.jsonl --json docs/results/answers_holdout_mixed_questions_from_sources.json
	$(BIN)/cafbot eval answers scenarios/answers/holdout-requests-in-conversation.jsonl --json docs/results/answers_holdout_requests_in_conversation.json
	$(BIN)/cafbot eval report

# The README's screenshots, taken by the browser test (needs Debian's chromium).
screenshots: $(VENV)/.installed-dev
	CAFBOT_TEST_ARTEFACTS=docs/screenshots $(BIN)/pytest -q tests/test_app_browser.py

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/bench_retrieval.py
	$(BIN)/python bench/bench_graph.py
	$(BIN)/python bench/bench_caf.py
	$(BIN)/python bench/bench_replicas.py
	$(BIN)/python bench/bench_server.py
	$(BIN)/python bench/bench_ask.py

clean:
	rm -rf .cafbot .pytest_cache .ruff_cache
