package main

import (
	"context"
	"io"

	"strata/core/config"
)

func cmdListPlugins(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("list-plugins", "", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	config.ListPlugins(stdout)
	return nil
}
