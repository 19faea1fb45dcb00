# The two commands a newcomer needs (see README.md):
#   make run    build, then start the whole platform on 127.0.0.1
#   make test   build, then run every test
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps deps-run build build-run run test clean bench

# What `make run` starts, and nothing else: no test suites, benches or the
# browser suite's npm packages (those come with `make test`).
RUN_TARGETS = kb-devbroker kb-gateway kb-ranker kb-worker kb

all: build

# Packages: the run set for `make run`, the test set (a superset) for the
# rest (scripts/deps.sh).
deps:
	@scripts/deps.sh test

deps-run:
	@scripts/deps.sh run

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

build-run: deps-run $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target $(RUN_TARGETS)

run: build-run
	@scripts/run.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

bench: build
	@bench/pipeline.sh $(BUILD)

clean:
	rm -rf $(BUILD)
