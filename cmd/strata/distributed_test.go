package main

import (
	"strings"
	"testing"
)

// TestTrainUnderMPIWithoutTag: a binary built without MPI and started by
// mpirun (its environment) refuses to train, naming the fix, exit 2.
func TestTrainUnderMPIWithoutTag(t *testing.T) {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, "2")
			code, stdout, stderr := cli(t, append([]string{"train", "--set", "data.dataset=embedded:cora", "--set", "train.mode=distfull", "--set", "train.epochs=1"}, wasmArgs()...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "-tags mpi") || !strings.Contains(stderr, "make build-mpi") || !strings.Contains(stderr, v+"=2") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
		})
	}
}

// TestTrainDistributedAlone: a distributed strategy without mpirun trains
// as one rank, and the text result line has no per-rank part.
func TestTrainDistributedAlone(t *testing.T) {
	code, stdout, stderr := cli(t, append([]string{"train", "--set", "data.dataset=embedded:cora", "--set", "train.mode=distfull", "--set", "train.epochs=2", "--set", "output.progress=off", "--set", "output.json=false"}, wasmArgs()...)...)
	if code != 0 || !strings.Contains(stdout, "best valid") || strings.Contains(stdout, "ranks:") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
