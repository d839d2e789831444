package config

import (
	"fmt"
	"io"

	"strata/core/registry"
)

// ListPlugins writes every registry namespace with its modules, their doc
// lines and their options (`strata list-plugins`). Modules known but not
// in this build are listed with the way to get them.
func ListPlugins(w io.Writer) {
	for _, ns := range registry.Namespaces() {
		mods := registry.Namespace(ns)
		fmt.Fprintf(w, "%s (%d)\n", ns, len(mods))
		if len(mods) == 0 {
			fmt.Fprintln(w, "  (none registered yet)")
		}
		for _, m := range mods {
			fmt.Fprintf(w, "  %-26s %s\n", m.ID, m.Doc)
			for _, opt := range PluginOptions(m.New()) {
				fmt.Fprintf(w, "      %s\n", opt)
			}
		}
		for _, id := range registry.UnavailableIn(ns) {
			fmt.Fprintf(w, "  %-26s (not in this build: %s)\n", id, registry.Unavailable(id))
		}
	}
}
