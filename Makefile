# loadbench: `make` builds, `make run` measures, `make test` tests. See README.md.

BUILD    ?= build
EXPERIMENT ?= quick
REPS     ?=
DATA     ?= data
JOBS     ?= $(shell nproc)
STAMP    := $(shell date +%Y%m%d-%H%M%S)
RESULTS  ?= results/$(EXPERIMENT)-$(STAMP)
BIN      := $(BUILD)/loadbench
# A step whose output goes to a log, one line on the screen (scripts/step.sh).
STEP      = bash scripts/step.sh
MAKEFLAGS += --no-print-directory

.PHONY: all build binary run report compare machines reference aa gpu-check bench probe fuzz peers test \
  test-asan format setup clean

all: build

# setup.sh installs only what is missing; the stamp keeps make from asking dpkg every time.
$(BUILD)/.setup-done: scripts/setup.sh
	@SETUP_LOG=$(BUILD)/setup.log bash scripts/setup.sh
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/CMakeCache.txt: $(BUILD)/.setup-done CMakeLists.txt
	@$(STEP) $(BUILD)/configure.log "cmake: configure $(BUILD)" \
	  cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

# The binaries; the tests are built where they run, in the sanitizer tree (`make test`).
# `cmake --build build` still builds everything, for working on the tests.
build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target loadbench loadbench_bench

# The loadbench binary alone, its compiler output in a log (what `make run` needs).
binary: $(BUILD)/CMakeCache.txt
	@$(STEP) $(BUILD)/build.log "build: $(BIN)" cmake --build $(BUILD) -j $(JOBS) --target loadbench

setup:
	bash scripts/setup.sh

# The setup plus what the PyTorch peers of loaders/peers/ need: python3-torch (large; the
# other peers need only the setup's numpy and python3-xxhash). Left out of the setup that
# `make run` and `make test` do, so that both stay quick on a fresh machine; without it the
# PyTorch peers are `unsupported` (experiments/peers.toml) and their tests skip.
peers:
	bash scripts/setup.sh peers

# An experiment file (experiments/$(EXPERIMENT).toml) into a fresh results folder, then its report;
# RESULTS of an interrupted one resumes it. The report is written when every run was recorded
# (exit 0, or 1: some runs failed or were invalid, which the report shows); it ends the output
# with where it is and the verdict.
run: binary
	@$(BIN) experiment experiments/$(EXPERIMENT).toml --data $(DATA) --out $(RESULTS) \
	  $(if $(REPS),--reps $(REPS)); rc=$$?; \
	if [ $$rc -le 1 ]; then /usr/bin/python3 -m analysis.report $(RESULTS) --brief || exit $$?; fi; \
	exit $$rc

# A results folder (RESULTS=DIR) into DIR/report.md, DIR/report.html, DIR/figures/ and
# DIR/summary.json.
report: $(BUILD)/.setup-done
	@$(if $(filter file,$(origin RESULTS)),echo "make report: give RESULTS=DIR (a results folder)" >&2; exit 2)
	/usr/bin/python3 -m analysis.report $(RESULTS)

# Two results folders side by side (A=DIR B=DIR): compare.md and compare.json into OUT (default B).
compare: $(BUILD)/.setup-done
	@$(if $(and $(A),$(B)),,echo "make compare: give A=DIR B=DIR (two results folders)" >&2; exit 2)
	/usr/bin/python3 -m analysis.compare $(A) $(B) $(if $(OUT),--out $(OUT))

# Results folders from one machine or many side by side (DIRS="a b c"): machines.md,
# machines.html, machines.json and figures/ into OUT (default results/machines-<time>); each
# strategy against its own machine's limits, the order flips between machines, and the model of
# a load from the probe's figures, predicted against measured. PREDICT=FILE (a machine's figures
# as JSON, an env.json or a results folder) adds each strategy's expected time there.
machines: $(BUILD)/.setup-done
	@$(if $(DIRS),,echo "make machines: give DIRS=\"DIR DIR ...\" (results folders)" >&2; exit 2)
	/usr/bin/python3 -m analysis.machines $(DIRS) $(if $(OUT),--out $(OUT)) \
	  $(if $(PREDICT),--predict $(PREDICT))

# The reference results that `make compare` sets new hardware against (results/reference/): the
# default experiment and all-strategies from a clean tree, thinned, reported, with a README.md
# saying how they were made (scripts/reference.sh; 15 to 40 minutes on a 2-core VM, as fast as
# its disk). It installs the PyTorch peers first: the reference holds every peer that exists.
reference: binary peers
	@LOADBENCH=$(BIN) bash scripts/reference.sh $(DATA)

# Microbenchmarks of the building blocks; the JSON goes beside the other results.
BENCH_OUT ?= results/bench-$(shell date +%Y%m%d-%H%M%S)
bench: build
	@mkdir -p $(BENCH_OUT) $(DATA)
	LOADBENCH_BENCH_DIR=$(DATA) $(BUILD)/loadbench_bench --benchmark_out=$(BENCH_OUT)/bench.json \
	  --benchmark_out_format=json
	@echo "results: $(BENCH_OUT)/bench.json"

# The A/A calibration: experiments/aa.toml AA_RUNS times into AA_OUT, then the false-positive
# rate of the paired comparison over them.
AA_RUNS ?= 20
AA_OUT  ?= results/aa-calibration-$(shell date +%Y%m%d-%H%M%S)
aa: build
	bash scripts/aa.sh $(AA_RUNS) $(AA_OUT) $(DATA)

# On a machine with an NVIDIA GPU: the CUDA tests on the device, the probe and
# experiments/gpu.toml into GPU_OUT, within 6 minutes (scripts/gpu-check.sh).
GPU_OUT ?= results/gpu-$(shell date +%Y%m%d-%H%M%S)
gpu-check:
	bash scripts/gpu-check.sh $(GPU_OUT) $(DATA)

# This machine's ceilings (device, page cache, memory, faults), with a scratch file in $(DATA).
probe: build
	@mkdir -p $(DATA)
	$(BIN) probe --dir $(DATA)

# The safetensors and GGUF readers under libFuzzer, ASan and UBSan, FUZZ_SECONDS per target
# (both at once); a crasher lands in $(BUILD)-fuzz/crashes/ (see scripts/fuzz.sh).
FUZZ_SECONDS ?= 600
fuzz:
	@bash scripts/setup.sh fuzz
	bash scripts/fuzz.sh $(FUZZ_SECONDS) $(BUILD)-fuzz

# First the check that every C++ file is formatted (.clang-format, scripts/format.sh; `make
# format` applies it). Then one build under AddressSanitizer and UndefinedBehaviorSanitizer:
# every parser of untrusted files must survive them, and on two cores one build is most of the
# time `make test` takes. Then ctest runs every test, two at a time (CMakeLists.txt says which
# may run side by side and which run alone: a cold run beside another test drops only its own
# files' pages), the GoogleTest suite in one process (an ASan binary starts slowly, and a
# process per case takes three to four times longer here). Line tables only (-g1): sanitizer
# reports keep file and line, the build is faster; the headers nearly every file includes come
# precompiled (CMakeLists.txt, loadbench_pch). The suite runs with the machine tuned
# (`loadbench system tune -- COMMAND`: DAMON's pageout stopped, free page reporting held off;
# restored when it ends, or by the next measuring command after a kill), so that no warm test's
# file leaves the page cache by itself; untuned where not root.
ASAN_BUILD := $(BUILD)-asan
test: $(BUILD)/.setup-done
	bash scripts/format.sh check
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DLOADBENCH_SANITIZE=ON \
	  -DCMAKE_CXX_FLAGS_DEBUG=-g1
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ./loadbench system tune -- ctest -j 2 --output-on-failure -L 'binary|python'

# The C++ formatted by .clang-format, in place (`make test` fails on a file that is not).
format: $(BUILD)/.setup-done
	bash scripts/format.sh apply

# Only the GoogleTest suite, in the same build.
test-asan: $(BUILD)/.setup-done
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DLOADBENCH_SANITIZE=ON \
	  -DCMAKE_CXX_FLAGS_DEBUG=-g1
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target loadbench_tests
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ./loadbench_tests --gtest_brief=1

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz
