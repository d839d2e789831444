// Package reads is a fixture of the read rule (TestReadRuleCatches).
package reads

import "os"

// Direct reads of a path a user may name: each is caught.
func open(path string) {
	f, _ := os.Open(path)
	f.Close()
	_, _ = os.ReadFile(path)
	g, _ := os.OpenFile(path, os.O_RDONLY, 0)
	g.Close()
}
