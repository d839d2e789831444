package writes

import . "os"

// A dot import hides what is called: caught.
func dot(p string) { Remove(p) }
