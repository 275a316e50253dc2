# Two commands for a new user: `make demo` (run it) and `make test` (test it).
PYTHON ?= python3.11
VENV := .venv
VENV_OLDEST := .venv-4.2
DEV_PINS := "numpy<2" pytest==9.2.0 pytest-blender==3.0.8 hypothesis==6.170.15 ruff==0.17.6 texture2ddecoder==1.0.6
BPY := bpy==5.0.1
BPY_OLDEST := bpy==4.2.23

# With a real Blender (BLENDER_EXECUTABLE=/path/to/blender) pytest-blender runs
# the suite inside it; otherwise the pinned bpy module runs it in this Python.
ifdef BLENDER_EXECUTABLE
PYTEST_MODE := --blender-executable $(BLENDER_EXECUTABLE)
else
PYTEST_MODE := -p no:pytest-blender
endif

# The fuzzer: a long campaign (FUZZ_MINUTES) and CI's fixed, seeded budget of about two minutes
# on a 2-core machine. Defects in the known list are reported without failing.
FUZZ_MINUTES ?= 30
FUZZ := PYTHONPATH=tools $(VENV)/bin/python -m fuzz --known tests/fuzz/known_defects.txt

.PHONY: test test-oldest lint validate build demo bench fuzz fuzz-ci clean

$(VENV)/.stamp:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet $(BPY) $(DEV_PINS)
	touch $@

$(VENV_OLDEST)/.stamp:
	$(PYTHON) -m venv $(VENV_OLDEST)
	$(VENV_OLDEST)/bin/pip install --quiet $(BPY_OLDEST) $(DEV_PINS)
	touch $@

test: $(VENV)/.stamp
	$(VENV)/bin/python -m pytest tests $(PYTEST_MODE) $(PYTEST_ARGS)

# The Blender-side tests on the oldest supported Blender (4.2 LTS).
test-oldest: $(VENV_OLDEST)/.stamp
	$(VENV_OLDEST)/bin/python -m pytest tests/blender -p no:pytest-blender $(PYTEST_ARGS)

lint: $(VENV)/.stamp
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

validate: $(VENV)/.stamp
	$(VENV)/bin/python tools/extension.py validate

build: validate
	$(VENV)/bin/python tools/extension.py build --output-dir build

demo: $(VENV)/.stamp
	$(VENV)/bin/python tools/render.py demo --out build/demo

# Every workload of issue 20 with its ratios and goals (bench/bench.py, which rewrites README's speed
# table), then the format-only benches.
bench: $(VENV)/.stamp
	$(VENV)/bin/python bench/bench.py --readme README.md
	$(VENV)/bin/python bench/bench_toshi_format.py
	$(VENV)/bin/python bench/bench_build.py
	$(VENV)/bin/python bench/bench_textures.py

fuzz: $(VENV)/.stamp
	$(FUZZ) --minutes $(FUZZ_MINUTES)

fuzz-ci: $(VENV)/.stamp
	$(FUZZ) --inputs 2000 --blender-inputs 500 --seed 1

clean:
	rm -rf build $(VENV) $(VENV_OLDEST) .pytest_cache .ruff_cache .hypothesis
