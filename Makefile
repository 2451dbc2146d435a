# The two set-up commands of the README. Each creates the environment when it is missing
# (a virtualenv in .venv with the pinned dependencies) and then does its job.
#   make run    the main job: the conformance suite against the embedded oracle
#   make test   the project's own tests (pytest, in parallel with xdist)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test env catalogs
run: $(STAMP)
	$(BIN)/dsh-conformance run

test: $(STAMP)
	$(BIN)/python -m pytest -n auto -q

env: $(STAMP)

catalogs: $(STAMP)
	$(BIN)/dsh-conformance catalogs generate

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@
