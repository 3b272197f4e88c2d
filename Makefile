# The two commands of the README: `make run` and `make test`. Everything else is a helper for them.
JOBS ?= 2
MAKEFLAGS += --no-print-directory

.PHONY: deps configure build gate run test test-asan bench clean

deps:
	@./scripts/install-deps.sh

configure: deps
	@cmake --preset release >/dev/null

build: configure
	@cmake --build --preset release -j $(JOBS)

# Only the executables (what `make run` needs), without the tests and benchmarks.
gate: configure
	@cmake --build --preset release -j $(JOBS) --target sandgate sandgate-connect

# Starts the proxy on its embedded defaults (127.0.0.1:9877, blocklist at ~/.config/goose/sandbox/blocked.txt).
run: gate
	./build/bin/sandgate serve

test: build
	ctest --preset release -j $(JOBS)

test-asan: deps
	@cmake --preset debug-asan >/dev/null
	@cmake --build --preset debug-asan -j $(JOBS)
	ctest --preset debug-asan -j $(JOBS)

bench: build
	./bench/run-micro.sh

clean:
	rm -rf build build-asan
