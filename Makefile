# loadbench: `make` builds, `make run` measures, `make test` tests. See README.md.

BUILD    ?= build
EXPERIMENT ?= quick
REPS     ?=
DATA     ?= data
JOBS     ?= $(shell nproc)
RESULTS  ?= results/$(EXPERIMENT)-$(shell date +%Y%m%d-%H%M%S)
BIN      := $(BUILD)/loadbench
MAKEFLAGS += --no-print-directory

.PHONY: all build run bench probe fuzz test test-asan setup clean

all: build

# setup.sh installs only what is missing; the stamp keeps make from asking dpkg every time.
$(BUILD)/.setup-done: scripts/setup.sh
	@bash scripts/setup.sh
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/CMakeCache.txt: $(BUILD)/.setup-done CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

# The binaries; the GoogleTest binary is built where it runs, in the sanitizer tree (test-asan).
# `cmake --build build` still builds everything, for working on the tests.
build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target loadbench loadbench_bench

setup:
	bash scripts/setup.sh

# An experiment file (experiments/$(EXPERIMENT).toml) into a fresh results folder; RESULTS of an
# interrupted one resumes it.
run: build
	$(BIN) experiment experiments/$(EXPERIMENT).toml --data $(DATA) --out $(RESULTS) \
	  $(if $(REPS),--reps $(REPS))

# Microbenchmarks of the building blocks; the JSON goes beside the other results.
BENCH_OUT ?= results/bench-$(shell date +%Y%m%d-%H%M%S)
bench: build
	@mkdir -p $(BENCH_OUT) $(DATA)
	LOADBENCH_BENCH_DIR=$(DATA) $(BUILD)/loadbench_bench --benchmark_out=$(BENCH_OUT)/bench.json \
	  --benchmark_out_format=json
	@echo "results: $(BENCH_OUT)/bench.json"

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

# The tests, one at a time (some drop the page cache, which would disturb a warm-cache test
# running beside them). This build runs what drives its optimized binaries (labelled `binary`:
# the scripts' pytest, the real-file pytest, the microbenchmark smoke run); the GoogleTest suite
# runs in the sanitizer build, where its CLI tests drive that build's binary. Each suite is built
# and run once: the two builds are most of the time `make test` takes on two cores.
test: build
	cd $(BUILD) && ctest --output-on-failure -L binary
	$(MAKE) --no-print-directory test-asan

# The GoogleTest suite under AddressSanitizer and UndefinedBehaviorSanitizer: every parser of
# untrusted files must survive them. One process runs them all: an ASan binary starts slowly,
# and ctest would start it once per test (three to four times longer here).
test-asan: $(BUILD)/.setup-done
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DLOADBENCH_SANITIZE=ON
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 ./loadbench_tests --gtest_brief=1

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz
