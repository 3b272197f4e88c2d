# The two commands of the README: `make run` and `make test`. Everything else is a helper for them.
JOBS ?= 2
# Tests run at once: the optimised suite waits on sockets, child processes and timeouts far more
# than it computes, so twice as many tests as build jobs keep the cores busy (on two cores the
# release suite took 285 s at -j2 and 202 s at -j4: bench/results/2026-12-06-ci-time/); the ASan
# suite keeps both cores busy either way.
TEST_JOBS ?= $(shell echo $$((2 * $(JOBS))))
MAKEFLAGS += --no-print-directory

.PHONY: deps configure build gate run test test-release release-checks test-release-checks \
	build-asan test-asan build-tsan test-tsan fuzz bench format clean

deps:
	@./scripts/install-deps.sh

# WERROR=ON makes every compiler warning an error (CI builds so); off by default, so that a user's
# newer compiler with new warnings still builds.
WERROR ?= OFF
# UNITY=OFF compiles file by file instead of eight files at a time (CMakeLists.txt says why the
# default is ON): a change to one file then recompiles that file only.
UNITY ?= ON
CMAKE_OPTIONS = -DSANDGATE_WERROR=$(WERROR) -DSANDGATE_UNITY_BUILD=$(UNITY)

configure: deps
	@cmake --preset release $(CMAKE_OPTIONS) >/dev/null

build: configure
	@cmake --build --preset release -j $(JOBS)

# Only the executables (what `make run` needs), without the tests and benchmarks.
gate: configure
	@cmake --build --preset release -j $(JOBS) --target sandgate sandgate-connect

# Starts the proxy on its embedded defaults (127.0.0.1:9877, blocklist at ~/.config/goose/sandbox/blocked.txt).
run: gate
	./build/bin/sandgate serve

# The suites run in a network namespace with only loopback (scripts/offline.sh): nothing a test
# does can leave the machine, DNS included.
#
# `make test` on Linux: every test under AddressSanitizer and UndefinedBehaviorSanitizer
# (build-asan/), then, in the optimised tree (build/), what a sanitizer cannot check: the
# *ReleaseBuild cases, the Debian package and the benchmarks' smoke runs (release_checks in
# tests/CMakeLists.txt). One tree of tests, not two: the optimised tree compiles only its
# executables, benchmarks and five test programs (docs/testing.md has the numbers). Elsewhere
# (macOS, where the sanitizer preset's link options are Linux's) every test in the optimised tree.
# The optimised tree compiles while the ASan suite runs (at nice 10, so that the suite, which keeps
# both cores busy, goes first); its output goes to build/release-checks.log, whose end is shown if
# it fails.
ASAN_SUITE = ./scripts/offline.sh ctest --preset debug-asan -j $(TEST_JOBS)
RELEASE_CHECKS_SUITE = ./scripts/offline.sh ctest --preset release-checks -j $(TEST_JOBS)
ifeq ($(shell uname -s),Linux)
test: build-asan configure
	@nice -n 10 cmake --build --preset release-checks -j $(JOBS) >build/release-checks.log 2>&1 & \
	compile=$$!; \
	$(ASAN_SUITE); suite=$$?; \
	if ! wait $$compile; then \
	  tail -n 60 build/release-checks.log; \
	  echo "make test: building the optimised tree's checks failed: build/release-checks.log" >&2; \
	  exit 1; \
	fi; \
	[ $$suite -eq 0 ] || exit $$suite; \
	$(RELEASE_CHECKS_SUITE)
else
test: test-release
endif

# Every test in the optimised tree (build/): the whole of it compiled.
test-release: build
	./scripts/offline.sh ctest --preset release -j $(TEST_JOBS)

release-checks: configure
	@cmake --build --preset release-checks -j $(JOBS)

test-release-checks: release-checks
	$(RELEASE_CHECKS_SUITE)

# The whole suite under AddressSanitizer and UndefinedBehaviorSanitizer (build-asan/).
build-asan: deps
	@cmake --preset debug-asan $(CMAKE_OPTIONS) >/dev/null
	@cmake --build --preset debug-asan -j $(JOBS)

test-asan: build-asan
	$(ASAN_SUITE)

# The tests that run the gate's threads, under ThreadSanitizer (build-tsan/; the list is the target
# threaded_tests in tests/CMakeLists.txt, which the tsan build preset builds). CI runs it after
# `make test`.
build-tsan: deps
	@cmake --preset tsan $(CMAKE_OPTIONS) >/dev/null
	@cmake --build --preset tsan -j $(JOBS)

test-tsan: build-tsan
	./scripts/offline.sh ctest --preset tsan -j $(TEST_JOBS)

# Fuzzing for new inputs: every libFuzzer target for FUZZ_SECONDS each (clang, ASan and UBSan, in
# build-fuzz/), after its saved regressions; tests/fuzz/README.md. `make test` replays the
# corpora and regressions only (fuzz_replay.*), without a clang tree to compile.
FUZZ_SECONDS ?= 10
fuzz: deps
	./scripts/offline.sh ./tests/fuzz/run.sh $(FUZZ_SECONDS)

# The whole benchmark in one go (bench/README.md): micro-benchmarks, then sandgate against no
# proxy, tinyproxy and squid, instruction counts and plots into bench/results/DATE/. About 25
# minutes; `QUICK=1 make bench` takes a few. Only what it runs is built, not the tests.
bench: configure
	@cmake --build --preset release -j $(JOBS) --target sandgate sandgate-load sandgate-limit-proxy rules_bench
	./scripts/offline.sh ./bench/run.sh

# Formats every C++ file as .clang-format says (CTest's format_check fails on any that is not).
format: deps
	@./scripts/cxx-sources.sh | xargs clang-format -i

clean:
	rm -rf build build-asan build-tsan
