# The two commands a new user needs: `make run` and `make test`. See README.md.
.PHONY: all setup setup-test build run test format format-check bench clean
JOBS ?= $(shell nproc)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

all: build

# `make run` installs only what building and running the broker needs; `make test` and
# `make bench` add the test tools, clients and schema jar (scripts/setup --test).
setup:
	@scripts/setup

setup-test:
	@scripts/setup --test

build: setup
	@cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHALE_TESTS=OFF \
		-DSHALE_BENCH=OFF >/dev/null
	@cmake --build build/release -j $(JOBS) --target shale

run: build
	build/release/bin/shale serve --override http.listeners=http://127.0.0.1:8080 $(ARGS)

test: setup-test
	@scripts/test

format:
	@git ls-files '*.cc' '*.h' | grep -v '/generated/' | xargs clang-format -i

format-check:
	@git ls-files '*.cc' '*.h' | grep -v '/generated/' | xargs clang-format --dry-run --Werror

bench: setup-test
	@cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHALE_TESTS=ON \
		-DSHALE_BENCH=ON >/dev/null
	@cmake --build build/release -j $(JOBS)
	@scripts/bench-micro

clean:
	rm -rf build
