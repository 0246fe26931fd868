# The two commands the README promises: `make preview` and `make test`.
# Everything else is a building block of those or a maintainer's convenience.

PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
STACK       ?= dev
ARGS        ?=
# The CRD schemas: ../shared beside this checkout, else beside the checkout it was cloned from
# (a scratch clone such as /tmp/fresh of a local checkout), else ../shared (the preview then says
# the folder is missing). CRD_SCHEMAS=<folder or URL template> overrides.
ORIGIN      := $(shell git config --get remote.origin.url 2>/dev/null)
CRD_SCHEMAS ?= $(firstword $(wildcard $(abspath ../shared/crd-schemas) $(if $(filter /%,$(ORIGIN)),$(abspath $(ORIGIN)/../shared/crd-schemas))) $(abspath ../shared/crd-schemas))
STAMP       := $(VENV)/.installed-stamp
PY_DIRS     := __main__.py infra components tools policies tests bench examples
# Compiled ahead, as pip compiles installed packages: with PYTHONDONTWRITEBYTECODE set (our CI
# machines set it) every preview process would otherwise compile them again (docs/performance.md).
BYTECODE    := __main__.py infra components tools policies bench

.PHONY: install bytecode preview preview-all test lint typecheck pytest schema docs bench e2e e2e-stack e2e-day2 e2e-build pytest-real clean

install: $(STAMP)

$(STAMP): pyproject.toml policies/requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' -r policies/requirements.txt
	@touch $(STAMP)

bytecode: install
	@$(BIN)/python -m compileall -q $(BYTECODE)

## Offline preview of one stack: make preview STACK=prod [CRD_SCHEMAS=folder-or-url-template]
## [ARGS=--quiet] (any python -m tools.preview option)
preview: bytecode
	$(BIN)/python -m tools.preview --stack $(STACK) --crd-schemas '$(CRD_SCHEMAS)' $(ARGS)

## Offline preview of every Pulumi.<stack>.yaml in the project root.
preview-all: bytecode
	@set -e; for file in Pulumi.*.yaml; do \
		stack=$${file#Pulumi.}; stack=$${stack%.yaml}; \
		echo "== $$stack"; \
		$(BIN)/python -m tools.preview --stack $$stack --crd-schemas '$(CRD_SCHEMAS)'; \
	done

## The real Pulumi CLI and providers deploy a stack to a local cluster (docs/e2e.md):
## make e2e [STACK=dev]. Builds the Go tools first (cached outside the checkout), runs the tests
## that need them, then the stack's e2e.
e2e: e2e-build pytest-real e2e-stack

## Only the stack's e2e (the tools built): make e2e-stack STACK=prod
e2e-stack: bytecode
	AIPLATFORM_CRD_SCHEMAS='$(CRD_SCHEMAS)' $(BIN)/python -m tools.e2e run --stack $(STACK)

## Day two on the real engine (Kueue admitting, faults, destroy): make e2e-day2 [STACK=dev]
e2e-day2: bytecode
	AIPLATFORM_CRD_SCHEMAS='$(CRD_SCHEMAS)' $(BIN)/python -m tools.e2e day2 --stack $(STACK)

## Only build (or find cached) the e2e's Go tools: the CLI, providers, Kubernetes, etcd, KWOK, Kueue.
e2e-build: bytecode
	$(BIN)/python -m tools.e2e build

## What the real engine costs: pulumi preview and up against the kubectl floor on a local cluster,
## for dev, prod and synthetic stacks (docs/performance.md, "The real engine"). Starts clusters and
## takes minutes: never part of make test. make bench-real ARGS="--sizes 100 --plot docs/x.svg"
.PHONY: bench-real
bench-real: bytecode
	AIPLATFORM_CRD_SCHEMAS='$(CRD_SCHEMAS)' $(BIN)/python -m bench.real_engine $(ARGS)

## Lint, type-check and the whole test suite.
test: install lint typecheck pytest

lint: install
	$(BIN)/ruff check $(wildcard $(PY_DIRS))
	$(BIN)/ruff format --check $(wildcard $(PY_DIRS))

typecheck: install
	$(BIN)/mypy $(wildcard $(PY_DIRS))

pytest: bytecode
	AIPLATFORM_CRD_SCHEMAS='$(CRD_SCHEMAS)' $(BIN)/python -m pytest -m 'not real'

## The tests that run the real binaries (a local cluster, the CLI, the providers): part of make e2e.
pytest-real: bytecode
	AIPLATFORM_CRD_SCHEMAS='$(CRD_SCHEMAS)' $(BIN)/python -m pytest -m real tests/e2e

## Regenerate checked-in generated files (tests fail while they are stale).
schema: install
	$(BIN)/python -m tools.gen_config_schema
	$(BIN)/python -m tools.gen_outputs_schema
	$(BIN)/python -m tools.gen_policy_constants

docs: install
	$(BIN)/python tools/gen_policy_docs.py

bench: bytecode
	$(BIN)/python -m bench

clean:
	rm -rf build .mypy_cache .ruff_cache .pytest_cache
	find $(BYTECODE) -name __pycache__ -type d -prune -exec rm -rf {} +
