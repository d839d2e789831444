# strata: GNN training research framework. `make run` trains the default
# config; `make test` runs every test. Both install what they need first.
GO        ?= go
BIN       := bin/strata
BIN_MPI   := bin/strata-mpi
CONFIG    ?= configs/gcn-cora.toml
APT_PKGS  := libopenblas-dev libmetis-dev metis pkg-config g++ python3 python3-numpy libopenmpi-dev openmpi-bin time
GOFLAGS_T ?=

.PHONY: all deps models build run test test-long test-float bench lint clean experiments experiments-check experiments-reports experiments-index reproduce fuzz build-mpi run-mpi test-mpi
.PHONY: cuda-headers cuda-mock cuda-check ptx gpu-bundle gpu-selftest

all: build

deps:
	@scripts/deps.sh $(APT_PKGS)

models: deps
	@scripts/build-models.sh

# The binary carries the revision it was built at (Go's VCS stamp, and the
# linked one below where GOFLAGS=-buildvcs=false): make experiments
# publishes only from a binary built at the work tree's HEAD.
REVISION  := $(shell git rev-parse HEAD 2>/dev/null)

build: models
	$(GO) build -ldflags "-X main.linkedRevision=$(REVISION)" -o $(BIN) ./cmd/strata

run: build
	./$(BIN) train -c $(CONFIG)

# make test runs every test with -short: the few long reproductions
# (accuracy after a full schedule, every case of a sweep) run shrunk, not
# skipped. make test-long runs the packages that have such tests in full;
# CI runs both. -timeout is generous so that a loaded machine is slow, not
# failing.
LONG_PKGS  = $(sort $(dir $(shell grep -rl --include='*_test.go' 'testing.Short()' core plugins partitioners cmd experiments internal)))

test: models
	$(GO) test $(GOFLAGS_T) -short -timeout 30m ./...

test-long: models
	$(GO) test $(GOFLAGS_T) -timeout 60m $(addprefix ./,$(LONG_PKGS))

# make test-float runs the float-sensitive tests (backend conformance on
# cpu, sim and the cuda mock, the engine, the strategy equivalence tests)
# under every OpenBLAS kernel family the CPU runs (OPENBLAS_CORETYPE,
# checked to take effect) and with strata's own kernels on AVX2
# (STRATA_CPU_ISA=avx2): a tolerance tuned to one CPU fails here.
# FLOAT_FAMILIES="Haswell" picks the families. scripts/test-float.sh.
test-float: models cuda-mock
	GO=$(GO) CUDA_HDR=$(CUDA_HDR) CUDA_MOCK=$(CUDA_MOCK) scripts/test-float.sh

# `make fuzz` fuzzes every loader and parser (plain `go test` runs only
# their seed corpora); a failing input is saved under the package's
# testdata/fuzz/ and replayed by every later `go test`.
#
# Each target runs for a number of executions, not a duration: a duration
# -fuzztime can end a clean run with "context deadline exceeded" when the
# deadline races a worker's last input (golang/go#75804, fixed in Go 1.27,
# not in 1.26.x; CI failed on it in FuzzParse on a loaded machine). The
# counts are about 10 s of fuzzing each on a quiet 2-core machine; a loaded
# machine takes longer rather than failing. FUZZSCALE multiplies them
# (FUZZSCALE=10 for a longer search).
FUZZSCALE ?= 1
# Minimizing a new interesting input may take Go up to 60 s by default:
# bound it.
FUZZMINTIME ?= 3s
# Dataset formats are fuzzed by one target, FuzzFormats, which takes its
# inputs from every registered format.* module: a new format needs no line
# here.
FUZZ_TARGETS := ./core/config:FuzzParse:100000 ./core/config:FuzzOverride:100000 \
	./plugins/all:FuzzFormats:80000 ./core/graph/numpy:FuzzNPY:200000 ./core/graph/numpy:FuzzNPZ:300000 \
	./plugins/wasm:FuzzHostABI:15000 ./core/train:FuzzArrayFile:10000 ./core/safefile:FuzzLockFile:20000

fuzz: models
	@case "$(FUZZSCALE)" in ''|*[!0-9]*|0) echo "make fuzz: FUZZSCALE=$(FUZZSCALE): give a positive whole number (the factor on each target's executions)" >&2; exit 2;; esac
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; fn=$${rest%%:*}; n=$$(( $${rest##*:} * $(FUZZSCALE) )); \
		echo "== $$fn ($$pkg, $$n executions)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $${n}x -fuzzminimizetime $(FUZZMINTIME) $$pkg; \
	done

bench: models
	$(GO) test -run '^$$' -bench . -benchtime 3x ./core/... ./plugins/... ./partitioners/...

# `make experiments` runs every published experiment (experiments/*.toml)
# into experiments/results/<name>/, resuming: a finished run is reused
# only if its code (binary, libraries, modules, numerics) is unchanged, so
# a second invocation at the same build only rewrites the reports. Runs go
# with the pinned numerics (bin/strata sets OPENBLAS_CORETYPE and
# STRATA_CPU_ISA itself), and the runner refuses to write into
# experiments/results from a work tree with uncommitted changes (FORCE=1
# writes anyway, recorded as dirty). FRESH=1 reruns every run; OUT=DIR
# writes DIR/<name>/ instead (the index of experiments/README.md is then
# left alone); EXP="experiments/a.toml ..." picks experiments. At the end
# it regenerates the index of experiments/README.md.
EXP       ?= $(sort $(wildcard experiments/*.toml))
FRESH     ?=
OUT       ?=
FORCE     ?=
FULL      ?=

experiments: build
	@status=0; start=$$(date +%s); \
	for e in $(EXP); do \
		name=$$(basename $$e .toml); t0=$$(date +%s); \
		echo "== $$name"; \
		./$(BIN) experiment -c $$e $(if $(FRESH),--fresh) $(if $(FORCE),--force) $(if $(OUT),--out $(OUT)/$$name) || status=1; \
		echo "== $$name: $$(( $$(date +%s) - t0 )) s"; \
	done; \
	echo "== all experiments: $$(( $$(date +%s) - start )) s"; \
	$(if $(OUT),,./$(BIN) experiment --index experiments/README.md || status=1;) \
	exit $$status

# `make experiments-check` reruns each published experiment's [check]
# subset (a few minutes on 2 cores; CI runs it) into a temporary directory
# with the committed results' numerics and compares every checked column
# with experiments/results/<name>/; it fails on any difference, printing
# each (docs/experiments.md, "--check"). FULL=1, or `make reproduce`,
# reruns every run of every experiment (hours). EXP picks experiments.
experiments-check: build
	@status=0; start=$$(date +%s); \
	for e in $(EXP); do \
		name=$$(basename $$e .toml); t0=$$(date +%s); \
		echo "== $$name"; \
		./$(BIN) experiment -c $$e --check $(if $(FULL),,--subset) || status=1; \
		echo "== $$name: $$(( $$(date +%s) - t0 )) s"; \
	done; \
	echo "== all checks: $$(( $$(date +%s) - start )) s"; \
	exit $$status

reproduce:
	@$(MAKE) --no-print-directory experiments-check FULL=1

# The index of experiments/README.md, from the experiment files and their
# committed results (a test fails when it is stale).
# experiments-reports rewrites every published experiment's tables, plots
# and report.html from its stored results, running nothing (after a
# change of the report code; make experiments-check first).
experiments-reports: build
	@set -e; for e in $(EXP); do ./$(BIN) experiment -c $$e --reports-only; done

experiments-index: build
	./$(BIN) experiment --index experiments/README.md

# ----------------------------------------------------------------- MPI ----
# build-mpi builds bin/strata-mpi, strata with the Open MPI communicator
# (comm.mpi, -tags mpi), beside bin/strata; run-mpi trains CONFIG over NP
# ranks of this machine (distfull); test-mpi runs the communicator's test
# and scripts/mpi/check.sh (2- and 4-rank jobs on localhost against 1
# rank) under mpirun. docs/distributed.md.
build-mpi: models
	$(GO) build -tags mpi -ldflags "-X main.linkedRevision=$(REVISION)" -o $(BIN_MPI) ./cmd/strata

NP ?= 4
run-mpi: build-mpi
	$(MPIRUN) -np $(NP) $(BIN_MPI) train -c $(CONFIG) --set train.mode=distfull

test-mpi: build-mpi
	$(GO) vet -tags mpi ./plugins/mpi/ ./plugins/strategy/... ./cmd/strata/
	$(GO) test -c -tags mpi -o build/mpi.test ./plugins/mpi
	$(GO) test -c -tags mpi -o build/strategy-mpi.test ./plugins/strategy/dist
	@for n in 1 2 4; do echo "== comm.mpi and the distributed strategies on $$n ranks"; \
		$(MPIRUN) -np $$n build/mpi.test -test.run TestUnderMPI || exit 1; \
		$(MPIRUN) -np $$n build/strategy-mpi.test -test.run TestDistUnderMPI || exit 1; done
	MPIRUN="$(MPIRUN)" scripts/mpi/check.sh $(BIN_MPI)

# As root (CI, containers) Open MPI needs --allow-run-as-root; 4 ranks on a
# 2-core machine need --oversubscribe.
MPIRUN ?= mpirun --oversubscribe $(if $(filter 0,$(shell id -u)),--allow-run-as-root)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin models/wasm/*.wasm models/wasm/.build

# ---------------------------------------------------------------- CUDA ----
# The cuda backend (package cuda, build tag `cuda`) is built and tested here
# without a GPU; docs/cuda.md explains how. Everything lands in build/cuda.
#   cuda-headers  CUDA 11.8 headers, streamed from Debian's nvidia-cuda-dev
#   cuda-mock     CPU mock of libcuda.so.1/libcublas.so.13 (+ its selftest);
#                 also the link stubs for binaries shipped to a GPU machine
#   cuda-check    PTX freshness, go vet/build -tags cuda, go test -tags cuda
#                 ./cuda/... and the plugins' TestCUDA* against the mock
#   ptx           regenerate cuda/kernels/kernels.ptx with nvcc 11.8
#   gpu-bundle    scripts/gpu/bundle.sh (binaries + scripts for a GPU machine)
#   gpu-selftest  scripts/gpu/selftest.sh (the bundle's scripts, checked without a GPU)
CUDA_DIR  := build/cuda
# Packages outside cuda/ with tests on the cuda backend (files tagged
# cuda, tests named TestCUDA*): strategy.micro's micro_batches = "auto".
CUDA_PLUGIN_TESTS := ./plugins/strategy/micro/
# Under the mock every kernel thread runs in turn on one core: the Cora
# accuracy test trains this many epochs there (200 on a GPU).
CUDA_MOCK_EPOCHS ?= 20
CUDA_HDR  := $(CURDIR)/$(CUDA_DIR)/hdr/usr/include
CUDA_MOCK := $(CURDIR)/$(CUDA_DIR)/mock
CUDA_ENV  := CGO_ENABLED=1 CGO_CFLAGS="-I$(CUDA_HDR)" CGO_LDFLAGS="-L$(CUDA_MOCK)"
CUDA_MOCK_SRCS := $(wildcard cuda/internal/mock/*.c cuda/internal/mock/*.h \
	cuda/internal/mock/*.cu cuda/kernels/*.cu cuda/kernels/*.cuh) \
	cuda/internal/mock/symbols.txt cuda/internal/mock/testdata/selftest.ptx \
	scripts/cuda/build-mock.sh scripts/cuda/lib.sh

cuda-headers:
	@scripts/cuda/fetch-headers.sh $(CUDA_DIR)/hdr

# .ok is written last by build-mock.sh, after the selftest passed.
cuda-mock: cuda-headers
	@$(MAKE) --no-print-directory $(CUDA_DIR)/mock/.ok

$(CUDA_DIR)/mock/.ok: $(CUDA_MOCK_SRCS) $(CUDA_DIR)/hdr/usr/include/cuda.h
	scripts/cuda/build-mock.sh

cuda-check: models cuda-mock
	@scripts/cuda/ptx.sh --check
	$(CUDA_ENV) $(GO) vet -tags cuda ./cuda/... $(CUDA_PLUGIN_TESTS)
	$(CUDA_ENV) $(GO) build -tags cuda ./...
	$(CUDA_ENV) LD_LIBRARY_PATH=$(CUDA_MOCK) STRATA_CUDA_EPOCHS=$(CUDA_MOCK_EPOCHS) \
		$(GO) test $(GOFLAGS_T) -tags cuda ./cuda/...
	@# the plugins' tests that train on the cuda backend (TestCUDA*)
	$(CUDA_ENV) LD_LIBRARY_PATH=$(CUDA_MOCK) \
		$(GO) test $(GOFLAGS_T) -tags cuda -run '^TestCUDA' $(CUDA_PLUGIN_TESTS)
	@# the threads of every launch in the opposite order: a kernel that
	@# races on a GPU gives different results
	$(CUDA_ENV) LD_LIBRARY_PATH=$(CUDA_MOCK) MOCKCUDA_ORDER=reverse \
		$(GO) test $(GOFLAGS_T) -count=1 -tags cuda -run 'TestConformance|TestZeroCopy|TestStore' ./cuda/

ptx: cuda-headers
	scripts/cuda/ptx.sh

# The GPU scripts' checks that need no GPU (scripts/gpu/selftest.sh).
gpu-selftest: build
	scripts/gpu/selftest.sh

gpu-bundle: cuda-mock
	$(CUDA_ENV) CUDA_HDR=$(CUDA_HDR) CUDA_MOCK=$(CUDA_MOCK) scripts/gpu/bundle.sh
