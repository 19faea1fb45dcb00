# The two commands a newcomer needs (see README.md):
#   make run    build, then start the whole platform on 127.0.0.1
#   make test   build, then run every test
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps build run test clean bench

all: build

deps:
	@scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@scripts/run.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

bench: build
	@bench/pipeline.sh $(BUILD)

clean:
	rm -rf $(BUILD)
