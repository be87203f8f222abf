# Thoth: `make demo` sets up, ingests the example corpus and serves MCP; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DB ?= ./.thoth/lancedb
PORT ?= 8080
# torch is installed first, pinned to the CPU build, so sentence-transformers pulls no CUDA packages.
TORCH_SPEC ?= torch==2.13.0

.PHONY: install demo ingest-examples serve test lint bench clean emulator

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

ingest-examples: install
	$(PY) -m examples.pdfgen examples/pdfs
	THOTH_DB_URI=$(DB) $(PY) -m ingest --source examples/handbook --name handbook
	THOTH_DB_URI=$(DB) $(PY) -m ingest --source examples/pdfs --name reports

demo: ingest-examples
	@PORT=$(PORT) $(PY) -m thoth.cli client-config --url http://127.0.0.1:$(PORT)/mcp
	@echo ""
	@echo "Serving Thoth on http://127.0.0.1:$(PORT)/mcp (health: http://127.0.0.1:$(PORT)/health); Ctrl-C stops it."
	THOTH_DB_URI=$(DB) PORT=$(PORT) $(PY) -m thoth.mcp.server

# The GCS emulator by hand (docs/gcs.md): versioned buckets in memory, the request log on this terminal.
EMULATOR_PORT ?= 4443
emulator: install
	$(PY) scripts/emulator.py --port $(EMULATOR_PORT) --bucket library

serve: install
	THOTH_DB_URI=$(DB) PORT=$(PORT) $(PY) -m thoth.mcp.server

test: install
	$(PY) -m ruff check .
	$(PY) -m pytest -q

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check thoth ingest tests bench examples

clean:
	rm -rf .thoth examples/pdfs
