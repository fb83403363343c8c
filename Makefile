# The two commands of the README. Each installs what is missing, configures, builds and runs.
#   make demo    ring_pass, the RMA benchmark, the allreduce sweep and a data-parallel step on 4 local PEs
#   make test    the whole test suite (release build), then every fuzzer for 30 s; with WITH_ASAN=1 then
#                again under ASan+UBSan; with WITH_TSAN=1 the threaded parts' tests (label threads) under
#                ThreadSanitizer
#   make fuzz    builds the libFuzzer harnesses (clang, build-fuzz/) and runs each for FUZZ_SECONDS (600),
#                two at a time; FUZZ_MERGE=1 adds the inputs that reach new code to tests/fuzz/corpus
#   make mutants plants each mutant of tests/mutants/list in a scratch copy and checks that the tests catch it
#                (slow: a rebuild per mutant; not part of make test; docs/testing.md)
JOBS ?= $(shell nproc)
BUILD ?= build
NPES ?= 4
WITH_ASAN ?= 0
WITH_TSAN ?= 0
FUZZ_SECONDS ?= 600
FUZZ_JOBS ?= 2
FUZZ_MERGE ?= 0
# The Python the torch backend is built and tested with: empty for PyTorch 2.13.0 (CPU) in $(BUILD)/venv, or an
# interpreter that has torch 2.4 or newer (scripts/torch-env.sh)
TORCH_PYTHON ?=

.PHONY: all deps build demo test test-asan test-tsan fuzz mutants bench docs clean

all: build

deps:
	@bash scripts/install-deps.sh build

build: deps
	@py=$$(TORCH_PYTHON='$(TORCH_PYTHON)' bash scripts/torch-env.sh $(BUILD)) && \
	  cmake --preset release -DTESSERA_TORCH_PYTHON="$$py" >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD) $(NPES)

# Each stage prints the time it ends, so a slow CI run shows which stage took the time.
test: build
	@date +'make test: release build done at %T'
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600
	@date +'make test: release suite done at %T'
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=30 FUZZ_MERGE=0
	@date +'make test: fuzzers done at %T'
	@if [ "$(WITH_ASAN)" = 1 ]; then $(MAKE) --no-print-directory test-asan && date +'make test: ASan done at %T'; fi
	@if [ "$(WITH_TSAN)" = 1 ]; then $(MAKE) --no-print-directory test-tsan && date +'make test: TSan done at %T'; fi

test-asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS) --timeout 900 -LE nosan

# Only what the threaded parts' tests need is built: the launcher, three unit binaries and the PE programs.
TSAN_TARGETS = tessera-run tessera_unit_kernel tessera_unit_bootstrap tessera_unit_coll pe_coll_hosts pe_coll_stream pe_coll_plan pe_compute_stream pe_kernel_dist \
               pe_pgas_engine pe_pgas_threads pe_pgas_session pe_compute_stream_c pe_kernel_ops_c
test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target $(TSAN_TARGETS)
	@# UCX's memory hooks (libucm) call into a rwlock from a thread's exit path, where ThreadSanitizer's
	@# interceptor faults: the hooks are off under tsan (Tessera does not rely on UCX's memory events).
	@cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  UCX_MEM_MMAP_HOOK_MODE=none ctest --output-on-failure -j $(JOBS) --timeout 900 -L threads

fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build build-fuzz -j $(JOBS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_MERGE=$(FUZZ_MERGE) bash scripts/fuzz.sh build-fuzz

mutants: deps
	@JOBS=$(JOBS) bash scripts/mutants.sh

docs: build
	@cmake --build $(BUILD) --target docs
	@echo "C++ API reference: $(BUILD)/docs/api/html/index.html"

bench: build
	@bash scripts/install-deps.sh bench
	@bash bench/run_all.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-debug build-fuzz
