# Set-up and main commands. Every target installs what it needs into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export BERTLENS_DATA ?= $(abspath ../shared/data)

.PHONY: install demo lint test test-extended bench clean

$(BIN)/bertlens: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test,ray]'
	touch $@

install: $(BIN)/bertlens

demo: install
	$(BIN)/bertlens sweep --task stsb --out out/demo-stsb

# Style, formatting and the import contract (every arrow points down; no cycles): see pyproject.toml.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

test: lint
	$(BIN)/python -m pytest

# long checks, run by CI after `make test`: every command on a tiny model of every encoder family (the README's
# support table) and the multi-process torchrun runs
test-extended: install
	$(BIN)/python -m pytest -m extended

bench: install
	$(BIN)/python bench/embed_speed.py
	$(BIN)/python bench/sweep_cost.py

clean:
	rm -rf $(VENV) out build src/*.egg-info
