# strata: GNN training research framework. `make run` trains the default
# config; `make test` runs every test. Both install what they need first.
GO        ?= go
BIN       := bin/strata
CONFIG    ?= configs/gcn-cora.toml
APT_PKGS  := libopenblas-dev libmetis-dev metis pkg-config
GOFLAGS_T ?=

.PHONY: all deps models build run test bench lint clean experiments

all: build

deps:
	@scripts/deps.sh $(APT_PKGS)

models: deps
	@scripts/build-models.sh

build: models
	$(GO) build -o $(BIN) ./cmd/strata

run: build
	./$(BIN) train -c $(CONFIG)

test: models
	$(GO) test $(GOFLAGS_T) ./...

bench: models
	$(GO) test -run '^$$' -bench . -benchtime 3x ./core/... ./plugins/... ./partitioners/...

# `make experiments` runs every published experiment (experiments/*.toml)
# into experiments/results/<name>/, resuming: finished runs are skipped, so
# a second invocation only rewrites the reports. FRESH=1 reruns every run;
# OUT=DIR writes DIR/<name>/ instead (to compare a rerun with the committed
# results); EXP="experiments/a.toml ..." picks experiments.
EXP       ?= $(sort $(wildcard experiments/*.toml))
FRESH     ?=
OUT       ?=

experiments: build
	@status=0; start=$$(date +%s); \
	for e in $(EXP); do \
		name=$$(basename $$e .toml); t0=$$(date +%s); \
		echo "== $$name"; \
		./$(BIN) experiment -c $$e $(if $(FRESH),--fresh) $(if $(OUT),--out $(OUT)/$$name) || status=1; \
		echo "== $$name: $$(( $$(date +%s) - t0 )) s"; \
	done; \
	echo "== all experiments: $$(( $$(date +%s) - start )) s"; \
	exit $$status

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin models/wasm/*.wasm
