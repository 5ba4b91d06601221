# basin — build, run, test.
GO       ?= go
BIN      := bin/basin
DATA_DIR ?= ./basin-data
PKGS     := ./...

.PHONY: build run test lint bench fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/basin

## run: build and start one node with the embedded broker (psql -h 127.0.0.1 -p 5433 -U basin basin).
run: build
	./$(BIN) serve --data-dir $(DATA_DIR)

## test: every test, including the real psql and multi-process tests.
test: build
	$(GO) test -count=1 -timeout 15m $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

bench: build
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

clean:
	rm -rf bin
