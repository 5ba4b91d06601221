# basin — build, run, test.
GO       ?= go
BIN      := bin/basin
DATA_DIR ?= ./basin-data
PKGS     := ./...
# Extra `go test` flags for the compat tests, e.g. COMPAT_FLAGS='-run TestPsycopg2'.
COMPAT_FLAGS ?=

.PHONY: build run test test-go race cover compat compat-deps chaos failover lint bench bench-deps bench-micro fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/basin

## run: build and start one node with the embedded broker (psql -h 127.0.0.1 -p 5433 -U basin basin;
## Kafka clients at 127.0.0.1:9092). PG_ADDR, HTTP_ADDR and BROKER_ADDR set its addresses
## (make run PG_ADDR=127.0.0.1:6543), ARGS any other serve flags (make run ARGS='--log-level debug').
PG_ADDR     ?=
HTTP_ADDR   ?=
BROKER_ADDR ?=
ARGS        ?=
run: build
	./$(BIN) serve --data-dir $(DATA_DIR)$(if $(PG_ADDR), --pg-addr $(PG_ADDR))$(if $(HTTP_ADDR), --http-addr $(HTTP_ADDR))$(if $(BROKER_ADDR), --broker-addr $(BROKER_ADDR)) $(ARGS)

## test: every test, including the real psql and multi-process tests and the
## real-client compatibility tests (make compat).
test: build test-go compat

## test-go: every Go package's tests except compat/.
test-go:
	$(GO) test -count=1 -timeout 15m $$($(GO) list $(PKGS) | grep -v '/compat$$')

## race: the tests of the packages with concurrency under the race detector
## (.ci/run runs it after make test). The multi-process tests' basin binary
## is race-built too (internal/testcluster), with GORACE=halt_on_error=1: a
## race ends that node, and the test fails on its crash.
RACE_PKGS := ./catalog/... ./eval/... ./exec/... ./ha/... ./internal/... ./kafka/... ./materialize/... ./node/... ./pgwire/... ./pull/... ./query/... ./serde/... ./sql/... ./stream/...
race:
	$(GO) test -race -count=1 -timeout 30m $(RACE_PKGS)

## cover: the tests of test-go with coverage of every package, counting
## what the basin processes of the multi-process tests run too
## (BASIN_TEST_COVERDIR makes internal/testcluster build them with -cover
## and point their GOCOVERDIR at it); prints the coverage of the cluster code (COVER_FILES) per file,
## the three together and of the module. COVER_OUT=<dir> keeps the
## merged data (go tool covdata) and the profile cover.out there.
COVER_FILES := node/cluster.go node/control.go node/forward.go
COVER_OUT   ?=
cover:
	@out=$(if $(COVER_OUT),$(abspath $(COVER_OUT)),$$(mktemp -d)); \
	rm -rf $$out/unit $$out/procs $$out/merged; mkdir -p $$out/unit $$out/procs $$out/merged; \
	BASIN_TEST_COVERDIR=$$out/procs $(GO) test -count=1 -timeout 30m -cover -coverpkg=./... \
		$$($(GO) list $(PKGS) | grep -v '/compat$$') -args -test.gocoverdir=$$out/unit; \
	rc=$$?; \
	$(GO) tool covdata merge -i=$$out/unit,$$out/procs -o=$$out/merged && \
	$(GO) tool covdata textfmt -i=$$out/merged -o=$$out/cover.out && \
	awk -v files='$(COVER_FILES)' -v mod=$$($(GO) list -m) ' \
		BEGIN { n = split(files, f, " "); for (i = 1; i <= n; i++) want[mod "/" f[i]] = f[i] } \
		NR > 1 { split($$1, a, ":"); k = $$1; st[k] = $$2; if ($$3 > 0) hit[k] = 1; file[k] = a[1] } \
		END { \
			for (k in st) { all += st[k]; if (k in hit) allc += st[k]; \
				if (file[k] in want) { fs[file[k]] += st[k]; if (k in hit) fc[file[k]] += st[k] } } \
			for (i = 1; i <= n; i++) { g = mod "/" f[i]; ts += fs[g]; tc += fc[g]; \
				printf "%-24s %5.1f%% of %d statements\n", f[i], fs[g] ? 100 * fc[g] / fs[g] : 0, fs[g] } \
			printf "%-24s %5.1f%% of %d statements\n", "cluster code", ts ? 100 * tc / ts : 0, ts; \
			printf "%-24s %5.1f%% of %d statements\n", "all packages", all ? 100 * allc / all : 0, all }' $$out/cover.out; \
	[ -n '$(COVER_OUT)' ] || rm -rf $$out; exit $$rc

## compat: real clients (psycopg2, node-postgres, pgjdbc, SQLAlchemy, pgbench)
## against a basin process. .ci/run installs the clients; -v logs their versions.
compat: compat-deps
	$(GO) test -count=1 -timeout 10m -v $(COMPAT_FLAGS) ./compat/

## chaos: only the chaos test (also part of make test): 100,000 records into
## a 3-node cluster while random nodes are SIGKILLed and restarted; then every
## view and every standby must equal a recomputation exactly
## (node/chaos_test.go; BASIN_CHAOS_SEED=<seed> replays a run).
chaos: build
	$(GO) test -count=1 -timeout 20m -v -run '^TestChaos$$' ./node/

## failover: the failover benchmark (not part of make test; build tag
## failover): a steady pull-query load on a 3-node cluster with one standby
## through a SIGKILL and a SIGSTOP of the node holding the most actives;
## reports failed queries, wrong answers, latencies and time to
## reassignment (node/failover_bench_test.go, results in BENCHMARKS.md).
## BASIN_FAILOVER_RATE=<queries/s> sets the load (default 500);
## BASIN_FAILOVER_OUT=<path> also writes the markdown table there.
failover: build
	$(GO) test -count=1 -tags failover -timeout 20m -v -run '^TestFailoverBenchmark$$' ./node/

## compat-deps: node-postgres, from compat/node/package-lock.json (npm ci).
compat-deps: compat/node/node_modules/.package-lock.json

compat/node/node_modules/.package-lock.json: compat/node/package.json compat/node/package-lock.json
	cd compat/node && npm ci --no-audit --no-fund --loglevel=error

## lint: gofmt, go vet and staticcheck (a tool of go.mod: go tool staticcheck),
## also over the files of the bench and failover build tags.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags bench,failover ./bench/ ./node/
	$(GO) tool staticcheck $(PKGS)
	$(GO) tool staticcheck -tags bench,failover ./bench/ ./node/

## bench: basin side by side with PostgreSQL and the raw Kafka rate
## (bench/, build tag bench; not part of make test): prints the ratio table
## (BENCHMARKS.md explains it). BENCH_RUN=<regexp> runs some workloads
## (e.g. BENCH_RUN=B1); BASIN_BENCH_OUT=<path> also writes the table there.
## B5 is the failover benchmark (make failover), run first and appended
## to the table unless BENCH_RUN leaves it out.
BENCH_RUN ?= .
bench: build bench-deps
	@out=$$(mktemp -d); \
	if [ '$(BENCH_RUN)' = . ] || echo B5 | grep -Eq '$(BENCH_RUN)'; then \
		echo "B5: make failover (about a minute)"; \
		BASIN_FAILOVER_OUT=$$out/failover.md $(GO) test -count=1 -tags failover -timeout 20m -v -run '^TestFailoverBenchmark$$' ./node/ >$$out/failover.log 2>&1 \
			|| { echo "the failover benchmark failed:"; grep -E '^\s+(---|failover_bench)' $$out/failover.log | tail -20; }; \
	fi; \
	BASIN_BENCH_FAILOVER=$$out/failover.md BASIN_TEST_BINARY=$(abspath $(BIN)) $(GO) test -tags bench -count=1 -timeout 60m -v -run '$(BENCH_RUN)' ./bench/; \
	rc=$$?; rm -rf $$out; exit $$rc

## bench-deps: Debian's postgresql (the server and pgbench) when missing.
bench-deps:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v pgbench >/dev/null 2>&1; then \
		echo "installing postgresql"; \
		mkdir -p /etc/postgresql-common/createcluster.d; \
		echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/basin-bench.conf; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; \
	fi

## bench-micro: the Go micro-benchmarks of the hot paths (go test -bench).
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

clean:
	rm -rf bin
