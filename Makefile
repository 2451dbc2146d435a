# The two set-up commands of the README. Each creates what it needs when it is missing
# (a virtualenv in .venv with the pinned Python dependencies; the Node adapter's pinned
# npm packages in tools/dsh-adapter/node_modules) and then does its job.
#   make run    the main job: the conformance suite against the embedded oracle
#   make test   the project's own tests (pytest, in parallel with xdist)
# Further targets: make dsh (the suite against the real DSH package), make regen.

PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
ADAPTER := tools/dsh-adapter
NODE_STAMP := $(ADAPTER)/node_modules/.installed-$(shell cat $(ADAPTER)/package-lock.json | cksum | cut -d' ' -f1)
DSH_EXPECTATIONS := conformance/expectations/dsh-tools-0.1.0-rc.8.yaml

.PHONY: run test dsh env adapter regen
run: $(STAMP)
	$(BIN)/dsh-conformance run

test: $(STAMP) $(NODE_STAMP)
	$(BIN)/python -m pytest -n auto -q

dsh: $(STAMP) $(NODE_STAMP)
	$(BIN)/dsh-conformance run --impl dsh --expectations $(DSH_EXPECTATIONS)

env: $(STAMP)
adapter: $(NODE_STAMP)

regen: $(STAMP)
	$(BIN)/dsh-conformance catalogs generate
	$(BIN)/dsh-conformance docs generate
	$(BIN)/python -m pytest tests/test_corpus.py -n 0 -q --snapshot-update

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

$(NODE_STAMP): $(ADAPTER)/package-lock.json $(ADAPTER)/package.json
	npm ci --prefix $(ADAPTER) --no-audit --no-fund --loglevel=error
	touch $@
