# loadbench: `make` builds, `make run` measures, `make test` tests. See README.md.

BUILD    ?= build
EXPERIMENT ?= quick
REPS     ?=
DATA     ?= data
JOBS     ?= $(shell nproc)
BIN      := $(BUILD)/loadbench
# A step whose output goes to a log, one line on the screen (scripts/step.sh).
STEP      = bash scripts/step.sh
MAKEFLAGS += --no-print-directory

.PHONY: all build binary run report compare machines reference aa gpu-check bench probe fuzz peers test \
  test-asan format setup install deb clean

all: build

# The packages, by group (scripts/setup.sh): the base (what `make`, `make run` and the analysis
# need) and the groups of what needs more, each asked for by the targets below that need it.
# setup.sh installs only what is missing; a stamp per group keeps make from asking dpkg every
# time. A group that changes what the build finds (GoogleTest, Google Benchmark, OpenMPI)
# reconfigures the release tree when it has been configured, so that its next build has them.
RECONFIGURE_GROUPS := test bench cluster
$(BUILD)/.setup-%: scripts/setup.sh
	@mkdir -p $(BUILD)
	@SETUP_LOG=$(BUILD)/setup-$*.log bash scripts/setup.sh $*
	@if [ -f $(BUILD)/CMakeCache.txt ] && [ -n "$(filter $*,$(RECONFIGURE_GROUPS))" ]; then \
	  $(STEP) $(BUILD)/configure.log "cmake: reconfigure $(BUILD)" cmake -S . -B $(BUILD); fi
	@touch $@
.PRECIOUS: $(BUILD)/.setup-%

# cmake leaves the cache's time alone when no value changed: touched, so that make configures
# once per change rather than at every command.
$(BUILD)/CMakeCache.txt: $(BUILD)/.setup-base CMakeLists.txt
	@$(STEP) $(BUILD)/configure.log "cmake: configure $(BUILD)" \
	  cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	@touch $@

# The binaries (loadbench_bench where Google Benchmark is: the `bench` group); the tests are
# built where they run, in the sanitizer tree (`make test`). `cmake --build build` still builds
# everything, for working on the tests.
build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target loadbench_binaries

# The loadbench binary alone, its compiler output in a log (what `make run` needs).
binary: $(BUILD)/CMakeCache.txt
	@$(STEP) $(BUILD)/build.log "build: $(BIN)" cmake --build $(BUILD) -j $(JOBS) --target loadbench

# The base, or the groups named: `make setup GROUPS="test peers"`.
setup:
	bash scripts/setup.sh $(GROUPS)

# The setup plus what the PyTorch peers of loaders/peers/ need: python3-torch (large; the
# other peers need only the setup's numpy and python3-xxhash). Left out of the setup that
# `make run` and `make test` do, so that both stay quick on a fresh machine; without it the
# PyTorch peers are `unsupported` (experiments/peers.toml) and their tests skip.
peers: $(BUILD)/.setup-peers

# The groups an experiment needs, from what its file holds: a [server] or a [link]: remote; a
# [cluster]: cluster; a [[storage]]: storage; `profile = true`: profile; an exec strategy of
# package "fio": fio. The PyTorch peers are left to `make peers` (without them they are
# `unsupported`, with the reason).
EXPERIMENT_FILE = experiments/$(EXPERIMENT).toml
needs = $(if $(shell grep -qE '$(2)' $(EXPERIMENT_FILE) 2>/dev/null && echo y),$(1))
RUN_GROUPS = $(call needs,remote,^\[(server|link)\]) $(call needs,cluster,^\[cluster\]) \
  $(call needs,storage,^\[\[storage\]\]) $(call needs,profile,^profile *= *true) \
  $(call needs,fio,^package *= *"fio")

# An experiment file (experiments/$(EXPERIMENT).toml) into a fresh results folder
# (results/NAME-<UTC time>, or RESULTS=DIR), then its report: `loadbench experiment` writes it
# when every run was recorded (exit 0, or 1: some runs failed or were invalid, which the report
# shows) and ends the output with where it is and the one-line verdicts. RESUME=DIR goes on
# with an interrupted one (the command it printed says so too).
run: $(foreach g,$(RUN_GROUPS),$(BUILD)/.setup-$(g)) binary
	@$(BIN) experiment experiments/$(EXPERIMENT).toml --data $(DATA) \
	  $(if $(RESUME),--resume $(RESUME),$(if $(RESULTS),--out $(RESULTS))) \
	  $(if $(REPS),--reps $(REPS))

# A results folder (RESULTS=DIR) into DIR/report.md, DIR/report.html, DIR/figures/ and
# DIR/summary.json.
report: $(BUILD)/.setup-base
	@$(if $(RESULTS),,echo "make report: give RESULTS=DIR (a results folder)" >&2; exit 2)
	/usr/bin/python3 -m analysis.report $(RESULTS)

# Two results folders side by side (A=DIR B=DIR): compare.md and compare.json into OUT (default B).
compare: $(BUILD)/.setup-base
	@$(if $(and $(A),$(B)),,echo "make compare: give A=DIR B=DIR (two results folders)" >&2; exit 2)
	/usr/bin/python3 -m analysis.compare $(A) $(B) $(if $(OUT),--out $(OUT))

# Results folders from one machine or many side by side (DIRS="a b c"): machines.md,
# machines.html, machines.json and figures/ into OUT (default results/machines-<time>); each
# strategy against its own machine's limits, the order flips between machines, and the model of
# a load from the probe's figures, predicted against measured. PREDICT=FILE (a machine's figures
# as JSON, an env.json or a results folder) adds each strategy's expected time there.
machines: $(BUILD)/.setup-base
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
bench: $(BUILD)/.setup-bench build
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
# It builds the tests, which need the setup's `test` group (not with a bundle, LOADBENCH_BUNDLE).
GPU_OUT ?= results/gpu-$(shell date +%Y%m%d-%H%M%S)
gpu-check: $(if $(LOADBENCH_BUNDLE),,$(BUILD)/.setup-test)
	bash scripts/gpu-check.sh $(GPU_OUT) $(DATA)

# This machine's ceilings (device, page cache, memory, faults), with a scratch file in $(DATA).
probe: binary
	@mkdir -p $(DATA)
	$(BIN) probe --dir $(DATA)

# The safetensors and GGUF readers under libFuzzer, ASan and UBSan, FUZZ_SECONDS per target
# (both at once); a crasher lands in $(BUILD)-fuzz/crashes/ (see scripts/fuzz.sh).
FUZZ_SECONDS ?= 600
fuzz: $(BUILD)/.setup-fuzz
	bash scripts/fuzz.sh $(FUZZ_SECONDS) $(BUILD)-fuzz

# First the check that every C++ file is formatted (.clang-format, scripts/format.sh; `make
# format` applies it). Then one build under AddressSanitizer and UndefinedBehaviorSanitizer:
# every parser of untrusted files must survive them, and on two cores one build is most of the
# time `make test` takes. Then ctest runs every test, two at a time (CMakeLists.txt says which
# may run side by side and which run alone: a cold run beside another test drops only its own
# files' pages), the GoogleTest suite in one process (an ASan binary starts slowly, and a
# process per case takes three to four times longer here). Line tables only (-g1): sanitizer
# reports keep file and line, the build is faster; the headers nearly every file includes come
# precompiled, and the sources of each folder are compiled as one unit (CMakeLists.txt,
# loadbench_pch, loadbench_unity). The suite runs with the machine tuned
# (`loadbench system tune -- COMMAND`: DAMON's pageout stopped, free page reporting held off;
# restored when it ends, or by the next measuring command after a kill), so that no warm test's
# file leaves the page cache by itself; untuned where not root. Warnings are errors here (and so
# in CI, .ci/run), not in the release build: a user's newer compiler may warn where ours does not.
# The packages are the setup's `test` group: the tests' libraries and every tool the tests run.
ASAN_BUILD := $(BUILD)-asan
ASAN_CONFIGURE = cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DLOADBENCH_SANITIZE=ON \
	  -DLOADBENCH_WERROR=ON -DBUILD_TESTING=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1
test: $(BUILD)/.setup-base $(BUILD)/.setup-test
	bash scripts/format.sh check
	$(ASAN_CONFIGURE)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ./loadbench system tune -- ctest -j 2 --output-on-failure --no-tests=error \
	  -L 'binary|python'

# The C++ formatted by .clang-format, in place (`make test` fails on a file that is not).
format: $(BUILD)/.setup-format
	bash scripts/format.sh apply

# Only the GoogleTest suite, in the same build.
test-asan: $(BUILD)/.setup-test
	$(ASAN_CONFIGURE)
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target loadbench_tests
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ./loadbench_tests --gtest_brief=1

# The binary, the analysis, the peers, the experiments, the documentation and the bash
# completion under PREFIX (bin/, share/loadbench/, share/doc/loadbench/,
# share/bash-completion/completions/), from the release build; the binary finds its
# share/loadbench from its own path, so PREFIX may be anywhere (docs/install.md). DESTDIR is
# honoured, as by every `make install`.
PREFIX ?= /usr/local
install: binary
	@$(STEP) $(BUILD)/completion.log "build: bash completion" \
	  cmake --build $(BUILD) --target loadbench_completion
	cmake --install $(BUILD) --prefix $(PREFIX)

# The same as a Debian package (CPack), into $(BUILD)/package/: installed under /usr, depending
# on the runtime packages of the libraries the binary links and of the analysis, recommending the
# tools of the setup's other groups (docs/install.md).
deb: binary
	@$(STEP) $(BUILD)/completion.log "build: bash completion" \
	  cmake --build $(BUILD) --target loadbench_completion
	@$(STEP) $(BUILD)/cpack.log "cpack: $(BUILD)/package/" \
	  cpack --config $(BUILD)/CPackConfig.cmake -B $(BUILD)/package
	@ls $(BUILD)/package/*.deb

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz
