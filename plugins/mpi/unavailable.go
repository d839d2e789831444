//go:build !mpi

// Package mpi is the communicator comm.mpi: Open MPI through cgo, built
// with -tags mpi (make build-mpi). Without the tag the module is
// registered as unavailable, so that a binary started by mpirun says how
// to get it instead of training alone on every rank.
package mpi

import "strata/core/registry"

func init() {
	registry.RegisterUnavailable("comm.mpi", `this strata binary was built without MPI support: rebuild it with "go build -tags mpi ./cmd/strata" (make build-mpi builds bin/strata-mpi; needs libopenmpi-dev, see docs/distributed.md), or run it without mpirun`)
}
