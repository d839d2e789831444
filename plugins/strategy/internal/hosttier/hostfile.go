package hosttier

import (
	"os"

	"strata/core/safefile"
)

// OpenFile creates the host tier's scratch file path of size bytes, read
// and written with positioned I/O (hostFileMat). The path must not exist
// (safefile.CreateScratch: created exclusively and locked, never through
// a symbolic link, never an input); the returned function closes it and
// removes it, only while the path still names the file created here.
func OpenFile(path string, size int64, inputs ...string) (*os.File, func() error, error) {
	s, err := safefile.CreateScratch(path, size, inputs...)
	if err != nil {
		return nil, nil, err
	}
	return s.File(), s.Remove, nil
}
