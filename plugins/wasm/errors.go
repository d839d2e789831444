package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

// CallError reports a guest call that did not return normally: a trap (guest
// panic, out-of-bounds access, out of memory), an exit, or the deadline. Its
// message names the module, the export and the guest's stderr tail:
//
//	model "gcn": strata_layer_spec trapped: wasm error: unreachable; guest stderr: panic: boom
//	model "x": strata_layer_spec exceeded the 5s deadline (infinite loop?)
type CallError struct {
	Kind     string // "model" or "cost model"
	Module   string
	Export   string
	Err      error         // wazero's error, with the wasm stack trace
	Stderr   string        // everything the guest printed (head and tail if long)
	Deadline time.Duration // set when the deadline stopped the call
	Canceled bool          // the caller's context was canceled
	Limit    uint32        // memory limit in pages, to explain out-of-memory
}

func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q: %s ", e.Kind, e.Module, e.Export)
	switch {
	case e.Deadline > 0:
		fmt.Fprintf(&b, "exceeded the %v deadline (infinite loop?)", e.Deadline)
	case e.Canceled:
		b.WriteString("was canceled")
	default:
		var exit *sys.ExitError
		if errors.As(e.Err, &exit) {
			fmt.Fprintf(&b, "exited with code %d", exit.ExitCode())
		} else {
			fmt.Fprintf(&b, "trapped: %s", trapMessage(e.Err.Error()))
		}
	}
	if s := stderrSummary(e.Stderr); s != "" {
		fmt.Fprintf(&b, "; guest stderr: %s", s)
		if strings.Contains(s, "out of memory") && e.Limit > 0 {
			fmt.Fprintf(&b, " (memory limit %d pages = %d MiB)", e.Limit, e.Limit/16)
		}
	}
	return b.String()
}

func (e *CallError) Unwrap() error { return e.Err }

// trapMessage drops wazero's "module[...] function[...] failed: " prefix,
// which repeats what CallError already names.
func trapMessage(msg string) string {
	msg = firstLine(msg)
	if i := strings.Index(msg, "wasm error: "); i > 0 {
		return msg[i:]
	}
	return msg
}

// callError classifies an error returned by a guest call made under ctx.
func callError(ctx context.Context, kind, module, export string, err error, out *outBuf, deadline time.Duration, limit uint32) error {
	ce := &CallError{Kind: kind, Module: module, Export: export, Err: err, Stderr: out.String(), Limit: limit}
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	switch {
	case isExit && exit.ExitCode() == sys.ExitCodeDeadlineExceeded,
		errors.Is(ctx.Err(), context.DeadlineExceeded) && (isExit || errors.Is(err, context.DeadlineExceeded)):
		ce.Deadline = deadline
	case isExit && exit.ExitCode() == sys.ExitCodeContextCanceled,
		errors.Is(err, context.Canceled):
		ce.Canceled = true
	}
	return ce
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return strings.TrimSpace(s)
}

// stderrSummary picks the useful part of a guest's output: the Go runtime's
// "panic:" or "fatal error:" paragraph when there is one, otherwise the last
// few lines.
func stderrSummary(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	start := -1
	for _, marker := range []string{"panic: ", "fatal error: "} {
		if i := strings.Index(s, marker); i >= 0 && (i == 0 || s[i-1] == '\n') && (start < 0 || i < start) {
			start = i
		}
	}
	var lines []string
	if start >= 0 {
		para := s[start:]
		if i := strings.Index(para, "\n\n"); i >= 0 {
			para = para[:i]
		}
		lines = strings.Split(para, "\n")
		if len(lines) > 4 {
			lines = lines[:4]
		}
	} else {
		lines = strings.Split(s, "\n")
		if len(lines) > 4 {
			lines = lines[len(lines)-4:]
		}
	}
	out := strings.Join(lines, " | ")
	if len(out) > 600 {
		out = out[:600] + "…"
	}
	return out
}

// outBuf captures a guest's stdout and stderr, keeping the first and the
// last outHalf bytes when the guest prints more.
type outBuf struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte
	dropped int64
}

const outHalf = 16 << 10

func (b *outBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := outHalf - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*outHalf {
		cut := len(b.tail) - outHalf
		b.dropped += int64(cut)
		b.tail = append(b.tail[:0], b.tail[cut:]...)
	}
	return n, nil
}

func (b *outBuf) WriteString(s string) { _, _ = b.Write([]byte(s)) }

func (b *outBuf) String() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped > 0 {
		return fmt.Sprintf("%s\n… %d bytes dropped …\n%s", b.head, b.dropped, b.tail)
	}
	return string(b.head) + string(b.tail)
}

func (b *outBuf) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.head, b.tail, b.dropped = b.head[:0], b.tail[:0], 0
}
