package main

import (
	"context"
	"fmt"
	"io"

	"strata/core/config"
	"strata/core/registry"
)

func cmdListPlugins(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("list-plugins", "", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, ns := range registry.Namespaces() {
		mods := registry.Namespace(ns)
		fmt.Fprintf(stdout, "%s (%d)\n", ns, len(mods))
		if len(mods) == 0 {
			fmt.Fprintln(stdout, "  (none registered yet)")
		}
		for _, m := range mods {
			fmt.Fprintf(stdout, "  %-26s %s\n", m.ID, m.Doc)
			for _, opt := range config.PluginOptions(m.New()) {
				fmt.Fprintf(stdout, "      %s\n", opt)
			}
		}
	}
	return nil
}
