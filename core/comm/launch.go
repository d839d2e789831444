package comm

import (
	"context"
	"fmt"
	"strconv"

	"strata/core/registry"
)

// launcherVars are the environment variables by which MPI launchers tell
// a process the size of its group: Open MPI's mpirun, then PMIx and PMI
// (Slurm's srun --mpi, MPICH's hydra).
var launcherVars = []string{"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"}

// Launched reports whether the process was started by an MPI launcher
// (getenv is os.Getenv), with the group's size and the variable that told.
func Launched(getenv func(string) string) (size int, name string, ok bool) {
	for _, v := range launcherVars {
		if s := getenv(v); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				n = 0
			}
			return n, v, true
		}
	}
	return 0, "", false
}

// Join returns the group this process runs in: under an MPI launcher the
// registered comm.mpi module's communicator, otherwise a single-process
// one. A binary built without MPI and started by mpirun gets an error
// that names the fix (every rank would otherwise train alone).
func Join(ctx context.Context, getenv func(string) string) (Comm, error) {
	size, name, ok := Launched(getenv)
	if !ok {
		return NewSingle(), nil
	}
	op, err := registry.New[Opener]("comm.mpi")
	if err != nil {
		return nil, fmt.Errorf("started by an MPI launcher (%s=%s) but %w", name, getenv(name), err)
	}
	c, err := op.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("comm.mpi: %w", err)
	}
	if size > 0 && c.Size() != size {
		c.Close()
		return nil, fmt.Errorf("comm.mpi: MPI reports %d ranks, %s says %d", c.Size(), name, size)
	}
	return c, nil
}
