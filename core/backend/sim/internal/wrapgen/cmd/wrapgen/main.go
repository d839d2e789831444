// Command wrapgen regenerates core/backend/sim/wrap_gen.go; run it with
// go generate in core/backend/sim.
package main

import (
	"fmt"
	"os"

	"strata/core/backend/sim/internal/wrapgen"
)

func main() {
	if err := wrapgen.Write(wrapgen.Sim); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
