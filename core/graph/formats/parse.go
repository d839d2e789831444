package formats

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"sync"

	"strata/core/graph"
)

// chunkSize is the size of the text chunks handed to parser goroutines.
const chunkSize = 1 << 20

// textFile is an opened, possibly gzip-compressed, text input.
type textFile struct {
	name string // display name for error messages
	r    io.Reader
	c    io.Closer
}

// Close closes the underlying file.
func (t *textFile) Close() error { return t.c.Close() }

// openText opens rel in fsys, decompressing it when it starts with the gzip
// magic bytes. display is the name used in error messages.
func openText(fsys fs.FS, rel, display string) (*textFile, error) {
	if st, err := fs.Stat(fsys, rel); err == nil {
		if err := graph.CheckRegular(display, st); err != nil {
			return nil, err
		}
	}
	f, err := fsys.Open(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, graph.FileErrorf(graph.ErrMissing, display, 0, 0, "file does not exist")
		}
		return nil, graph.FileErrorf(graph.ErrMissing, display, 0, 0, "cannot open: %v", err)
	}
	return wrapText(f, display)
}

// wrapText wraps an open file, detecting gzip compression.
func wrapText(f io.ReadCloser, display string) (*textFile, error) {
	br := bufio.NewReaderSize(f, 256<<10)
	magic, err := br.Peek(2)
	isGz := strings.HasSuffix(display, ".gz")
	if err != nil && len(magic) == 0 {
		if errors.Is(err, io.EOF) {
			if isGz {
				f.Close()
				return nil, graph.FileErrorf(graph.ErrFormat, display, 0, 0, "empty file (0 bytes, not even a gzip header); regenerate or re-download it")
			}
			return &textFile{name: display, r: br, c: f}, nil
		}
		f.Close()
		return nil, graph.FileErrorf(graph.ErrFormat, display, 0, 0, "cannot read: %v", err)
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, graph.FileErrorf(graph.ErrTruncated, display, 0, 0, "gzip header is cut short; the file is incomplete: regenerate or re-download it")
			}
			return nil, graph.FileErrorf(graph.ErrFormat, display, 0, 0, "bad gzip header (%v); the file is corrupt: regenerate or re-download it", err)
		}
		return &textFile{name: display, r: zr, c: f}, nil
	}
	if isGz {
		f.Close()
		return nil, graph.FileErrorf(graph.ErrFormat, display, 0, 0, "not a gzip file (it does not start with the gzip magic bytes 1f 8b); recompress it with gzip or drop the .gz suffix")
	}
	return &textFile{name: display, r: br, c: f}, nil
}

// readError converts an error from reading a text stream into a *FileError.
func readError(file string, lines int, err error) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return graph.FileErrorf(graph.ErrTruncated, file, 0, 0, "gzip stream ends early after line %d; the file is incomplete: regenerate or re-download it", lines)
	case errors.Is(err, gzip.ErrChecksum):
		return graph.FileErrorf(graph.ErrChecksum, file, 0, 0, "gzip checksum mismatch after line %d; the file is corrupt: regenerate or re-download it", lines)
	case errors.Is(err, gzip.ErrHeader):
		return graph.FileErrorf(graph.ErrFormat, file, 0, 0, "invalid gzip data after line %d (%v); the file is corrupt: regenerate or re-download it", lines, err)
	}
	return graph.FileErrorf(graph.ErrFormat, file, 0, 0, "read error after line %d: %v; the file is corrupt: regenerate or re-download it", lines, err)
}

// lineChunk is a run of whole lines of a text file.
type lineChunk struct {
	seq  int    // chunk index, in file order
	line int    // 1-based number of the first line in data
	data []byte // whole lines; only the file's last line may lack '\n'
	buf  []byte // backing buffer, recycled after processing
}

// scanChunks reads tf, cuts it at line boundaries into chunks and calls fn
// on them from up to workers goroutines (workers == 1 keeps file order).
// It returns the number of lines and, if any chunk failed, the error of the
// earliest failing chunk, so the reported error does not depend on
// scheduling. A read error (truncated gzip) is reported after all chunks
// before it were checked.
func scanChunks(tf *textFile, workers int, fn func(c *lineChunk) error) (int, error) {
	if workers < 1 {
		workers = 1
	}
	var (
		mu      sync.Mutex
		errSeq  = math.MaxInt
		errVal  error
		wg      sync.WaitGroup
		work    = make(chan *lineChunk, workers)
		buffers = make(chan []byte, workers+2)
	)
	failedBefore := func(seq int) bool {
		mu.Lock()
		defer mu.Unlock()
		return errSeq < seq
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				if !failedBefore(c.seq) {
					if err := fn(c); err != nil {
						mu.Lock()
						if c.seq < errSeq {
							errSeq, errVal = c.seq, err
						}
						mu.Unlock()
					}
				}
				select {
				case buffers <- c.buf[:0]:
				default:
				}
			}
		}()
	}

	var (
		carry   []byte
		line    = 1
		seq     = 0
		readErr error
		longErr error // a line longer than MaxLineBytes
	)
	need := chunkSize
	for {
		var buf []byte
		select {
		case buf = <-buffers:
		default:
		}
		if cap(buf) < need {
			buf = make([]byte, need)
		}
		buf = buf[:cap(buf)]
		n := copy(buf, carry)
		var rerr error
		for n < len(buf) {
			k, err := tf.r.Read(buf[n:])
			n += k
			if err != nil {
				rerr = err
				break
			}
		}
		data := buf[:n]
		carry = carry[:0]
		if rerr == nil {
			cut := bytes.LastIndexByte(data, '\n')
			if cut < 0 {
				// A line longer than the buffer: read on with a bigger
				// one, up to MaxLineBytes.
				if len(buf) >= graph.MaxLineBytes {
					longErr = graph.FileErrorf(graph.ErrFormat, tf.name, line, 0, "line is longer than %d MiB (no newline in sight): is this a text dataset file?", graph.MaxLineBytes>>20)
					break
				}
				carry = append(carry, data...)
				need = min(2*len(buf), graph.MaxLineBytes)
				continue
			}
			carry = append(carry, data[cut+1:]...)
			data = data[:cut+1]
			need = max(chunkSize, 2*len(carry))
		} else if rerr != io.EOF {
			// Drop a partial last line: the read error is the problem to report.
			data = data[:bytes.LastIndexByte(data, '\n')+1]
		}
		if len(data) > 0 {
			c := &lineChunk{seq: seq, line: line, data: data, buf: buf}
			seq++
			line += bytes.Count(data, []byte{'\n'})
			if data[len(data)-1] != '\n' {
				line++
			}
			work <- c
		}
		if rerr != nil {
			if rerr != io.EOF {
				readErr = rerr
			}
			break
		}
		if failedBefore(seq) {
			break
		}
	}
	close(work)
	wg.Wait()
	lines := line - 1
	if errVal != nil {
		return lines, errVal
	}
	if longErr != nil {
		return lines, longErr
	}
	if readErr != nil {
		return lines, readError(tf.name, lines, readErr)
	}
	return lines, nil
}

// nextLine splits the first line off data, dropping "\n" and a trailing "\r".
func nextLine(data []byte) (line, rest []byte) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		line, rest = data, nil
	} else {
		line, rest = data[:i], data[i+1:]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// isBlank reports whether b holds only spaces and tabs.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// parseInt parses a decimal integer. The fast path handles an optional sign
// and up to 18 digits; other forms (spaces, long numbers) go to strconv.
func parseInt(b []byte) (int64, bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg, i = b[0] == '-', 1
	}
	if len(b) == i || len(b)-i > 18 {
		return parseIntSlow(b)
	}
	var v int64
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			return parseIntSlow(b)
		}
		v = v*10 + int64(c)
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseIntSlow parses a trimmed integer with strconv.
func parseIntSlow(b []byte) (int64, bool) {
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// pow10f32 holds the powers of ten that are exact in float32.
var pow10f32 = [...]float32{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10}

// parseFloatPrefix parses a simple decimal number ([-+]digits[.digits][e[-+]digits])
// at the start of b and returns its value, the number of bytes used and
// whether the fast path applied. The result equals strconv.ParseFloat(s, 32):
// the fast path is only taken when the mantissa and the power of ten are
// both exact in float32, so one correctly rounded operation gives the answer.
func parseFloatPrefix(b []byte) (float32, int, bool) {
	i, neg := 0, false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var mant uint64
	nd, exp := 0, 0
	sawDigit := false
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		sawDigit = true
		if mant == 0 && c == 0 {
			continue
		}
		if nd >= 19 {
			return 0, 0, false
		}
		mant = mant*10 + uint64(c)
		nd++
	}
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b); i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			sawDigit = true
			if mant == 0 && c == 0 {
				exp--
				continue
			}
			if nd >= 19 {
				return 0, 0, false
			}
			mant = mant*10 + uint64(c)
			nd++
			exp--
		}
	}
	if !sawDigit {
		return 0, 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			eneg = b[i] == '-'
			i++
		}
		start, e := i, 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e < 10000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if i == start {
			return 0, 0, false
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	var f float32
	switch {
	case mant == 0:
		f = 0
	case mant < 1<<24 && exp >= 0 && exp <= 10:
		f = float32(mant) * pow10f32[exp]
	case mant < 1<<24 && exp < 0 && exp >= -10:
		f = float32(mant) / pow10f32[-exp]
	default:
		return 0, 0, false
	}
	if neg {
		f = -f
	}
	return f, i, true
}

// parseFloatSlow parses a trimmed float32 with strconv (exotic forms: long
// mantissas, large exponents, inf, nan, surrounding spaces).
func parseFloatSlow(b []byte) (float32, bool) {
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return float32(v), true // ±Inf or 0 on overflow/underflow, like numpy
		}
		return 0, false
	}
	return float32(v), true
}

// splitFields splits line at sep into at most len(dst) fields and returns
// them with the total number of fields.
func splitFields(line []byte, sep byte, dst [][]byte) ([][]byte, int) {
	dst = dst[:0]
	n := 0
	for {
		i := bytes.IndexByte(line, sep)
		if i < 0 {
			if n < cap(dst) {
				dst = append(dst, line)
			}
			return dst, n + 1
		}
		if n < cap(dst) {
			dst = append(dst, line[:i])
		}
		n++
		line = line[i+1:]
	}
}

// splitSpace splits line at runs of spaces and tabs like strings.Fields, into
// at most cap(dst) fields, and returns them with the total number of fields.
func splitSpace(line []byte, dst [][]byte) ([][]byte, int) {
	dst = dst[:0]
	n := 0
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if n < cap(dst) {
			dst = append(dst, line[i:j])
		}
		n++
		i = j
	}
	return dst, n
}

// quoteField quotes a field for an error message, shortening long ones.
func quoteField(b []byte) string {
	const maxLen = 40
	if len(b) > maxLen {
		return strconv.Quote(string(b[:maxLen])) + "..."
	}
	return strconv.Quote(string(b))
}

// plural formats a count with its noun: "1 value", "3 values".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
