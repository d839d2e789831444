# strata: GNN training research framework. `make run` trains the default
# config; `make test` runs every test. Both install what they need first.
GO        ?= go
BIN       := bin/strata
CONFIG    ?= configs/gcn-cora.toml
APT_PKGS  := libopenblas-dev libmetis-dev metis pkg-config
GOFLAGS_T ?=

.PHONY: all deps models build run test bench lint clean

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

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin models/wasm/*.wasm
