package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Writer appends a run's events to a history. It is safe for concurrent use: every workload
// goroutine and the nemesis record through one Writer.
//
// Each event is written with a single Write call as soon as it is appended, with no buffering
// in between, so a run killed at any moment leaves a file whose lines are all complete except
// perhaps the last (which Reader skips as torn). Lines are not fsynced one by one; Close syncs
// a file that Create opened.
type Writer struct {
	out    io.Writer
	closer *os.File // the file Create opened, closed by Close; nil for NewWriter
	start  time.Time
	header Header

	// bufs holds line buffers, so that encoding (the expensive part) runs outside mu and does
	// not allocate once warm.
	bufs sync.Pool

	mu     sync.Mutex
	next   int64 // i of the next event
	err    error // sticky write error: after a failed write the file may end in a partial line
	closed bool

	count atomic.Int64
	bytes atomic.Int64
}

// maxPooledLine is the largest line buffer the writer keeps for reuse; a rare huge event (a
// big final read) should not pin its buffer for the rest of the run.
const maxPooledLine = 1 << 20

// Create creates (or truncates) the file at path and writes the header line to it. The run
// starts now: every event's t is measured from this call.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: create: %w", err)
	}
	w, err := NewWriter(f, h)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	w.closer = f
	return w, nil
}

// NewWriter writes the header line to out and returns a Writer that appends events to it. The
// run starts now. A zero h.Version means Version and an empty h.Started means the start time.
// Close does not close out.
func NewWriter(out io.Writer, h Header) (*Writer, error) {
	start := time.Now()
	switch h.Version {
	case 0:
		h.Version = Version
	case Version:
	default:
		return nil, fmt.Errorf("history: header version %d: this writer writes version %d", h.Version, Version)
	}
	if h.Started == "" {
		h.Started = start.UTC().Format(time.RFC3339Nano)
	}
	line, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("history: encode header: %w", err)
	}
	line = append(line, '\n')
	n, err := out.Write(line)
	if err != nil {
		return nil, fmt.Errorf("history: write header: %w", err)
	}
	w := &Writer{out: out, start: start, header: h}
	w.bytes.Store(int64(n))
	return w, nil
}

// Header returns the header as written (with Version and Started filled in).
func (w *Writer) Header() Header { return w.header }

// Invoke appends the invocation of f by process p with payload v, and returns it with its i
// and t set.
func (w *Writer) Invoke(p Process, f string, v Payload) (Op, error) {
	return w.Append(Op{Process: p, Type: Invoke, F: f, Value: v})
}

// Complete appends the completion of inv (same process and f) with type t (OK, Fail or
// Info), payload v and, for Fail and Info, the client's error text. It is for a process with
// one op in flight, whose completion is its next event; use CompleteAsync otherwise.
func (w *Writer) Complete(inv Op, t Type, v Payload, errText string) (Op, error) {
	if inv.Type != Invoke {
		return Op{}, fmt.Errorf("history: complete %s: op %d is a %q, not an invoke", inv.F, inv.Index, inv.Type)
	}
	if t == Invoke || !validType(t) {
		return Op{}, fmt.Errorf("history: complete %s: type %q is not a completion (ok, fail, info)", inv.F, t)
	}
	return w.Append(Op{Process: inv.Process, Type: t, F: inv.F, Value: v, Error: errText})
}

// CompleteAsync is Complete for a process with several ops in flight (an async producer): the
// completion carries "of", the i of inv, since it need not be the process's next event.
func (w *Writer) CompleteAsync(inv Op, t Type, v Payload, errText string) (Op, error) {
	if inv.Type != Invoke {
		return Op{}, fmt.Errorf("history: complete %s: op %d is a %q, not an invoke", inv.F, inv.Index, inv.Type)
	}
	if t == Invoke || !validType(t) {
		return Op{}, fmt.Errorf("history: complete %s: type %q is not a completion (ok, fail, info)", inv.F, t)
	}
	of := inv.Index
	return w.Append(Op{Process: inv.Process, Type: t, F: inv.F, Of: &of, Value: v, Error: errText})
}

// Append is the low-level call under Invoke and Complete: it assigns op's i (strictly
// increasing in file order) and t (monotonic nanoseconds since the run started), writes the
// line and returns op as written. The i and t that op carries are ignored. It fails when op
// could not be read back (see AppendOp), and from the first failed write on, since the file
// may then end in a partial line that further lines would turn into a malformed middle line.
func (w *Writer) Append(op Op) (Op, error) {
	if err := op.checkShape(); err != nil {
		return Op{}, fmt.Errorf("history: append %s %s: %w", op.Type, op.F, err)
	}
	bp, _ := w.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer func() {
		if cap(*bp) <= maxPooledLine {
			w.bufs.Put(bp)
		}
	}()
	// Leave room for the prefix, which holds i and t and so can only be written under mu: the
	// line is then written from the buffer in place, without copying the (longer) tail.
	buf := append((*bp)[:0], make([]byte, maxPrefix)...)
	buf, err := appendOpTail(buf, &op)
	*bp = buf
	if err != nil {
		return Op{}, fmt.Errorf("history: append %s %s: %w", op.Type, op.F, err)
	}
	buf = append(buf, '\n')
	*bp = buf

	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return Op{}, fmt.Errorf("history: append %s %s: %w", op.Type, op.F, os.ErrClosed)
	case w.err != nil:
		return Op{}, w.err
	}
	// i and t are taken under the lock that orders the writes, so that both grow in file order.
	op.Index = w.next
	op.Time = int64(time.Since(w.start))
	if err := op.checkOf(); err != nil {
		return Op{}, fmt.Errorf("history: append %s %s: %w", op.Type, op.F, err)
	}
	var pre [maxPrefix]byte
	prefix := appendPrefix(pre[:0], op.Index, op.Time)
	line := buf[maxPrefix-len(prefix):]
	copy(line, prefix)
	n, err := w.out.Write(line)
	w.bytes.Add(int64(n))
	if err != nil {
		w.err = fmt.Errorf("history: write op %d: %w", op.Index, err)
		return Op{}, w.err
	}
	w.next++
	w.count.Add(1)
	return op, nil
}

// Since returns the monotonic time since the run started, on the clock of the events' t.
func (w *Writer) Since() time.Duration { return time.Since(w.start) }

// Count returns the number of events written.
func (w *Writer) Count() int64 { return w.count.Load() }

// Bytes returns the number of bytes written, header included.
func (w *Writer) Bytes() int64 { return w.bytes.Load() }

// Close stops the writer; later appends fail. For a Writer from Create it syncs and closes the
// file. It returns the first write error the writer met, if any. Closing twice is a no-op.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var errs []error
	if w.err != nil {
		errs = append(errs, w.err)
	}
	if w.closer != nil {
		if err := w.closer.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("history: sync: %w", err))
		}
		if err := w.closer.Close(); err != nil {
			errs = append(errs, fmt.Errorf("history: close: %w", err))
		}
	}
	return errors.Join(errs...)
}
