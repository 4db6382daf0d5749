package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// LineError is a malformed line of a history: bad JSON, a missing or invalid field, or an i
// that does not grow. Line is 1-based and counts the header.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("history line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// Reader streams the events of a history, one line at a time, so that a history of any size
// is read in constant memory (plus the longest line).
//
// Lifetime of what Next returns: Next reuses memory between calls, so an Op it filled is valid
// until the next call to Next (with any *Op). What it reuses is the payload structs that
// op.Value points to and the backing arrays of their record lists. What it never reuses is
// strings, the Offset and Of pointers and Raw: a Record copied by value, or any string, may be
// kept for as long as needed. A caller that keeps a whole payload must copy it (for instance
// slices.Clone of a Records list). Record values are cut from chunks of 16 KiB shared by the
// values of many lines, so a kept value keeps its chunk in memory: a caller that keeps a few
// values out of millions should copy them (strings.Clone).
//
// ReadAhead decodes on other goroutines ahead of Next, with the same results.
type Reader struct {
	br     *bufio.Reader
	closer io.Closer // the file Open opened; nil for NewReader
	header Header
	dec    *decoder

	line int   // number of the last line read (1 is the header)
	last int64 // i of the last op returned, -1 before the first
	torn int   // line number of a skipped torn last line, 0 if none
	err  error // sticky: io.EOF at the end, or the first error

	long []byte // assembles lines longer than br's buffer

	ahead *readAhead // set by ReadAhead: Next takes ops decoded ahead from it
}

const (
	// readBuffer is big enough that typical lines (well under a kilobyte) and most final-read
	// chunks are returned straight from the buffer, without copying.
	readBuffer = 1 << 20
	// MaxLineBytes bounds the length of one line, so that a corrupt file (say, no newlines at
	// all) fails with an error rather than exhausting memory.
	MaxLineBytes = 1 << 30
	// keepLong is the largest long-line buffer kept between lines.
	keepLong = 16 << 20
)

// Open opens the history at path and reads its header. Close closes the file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: open: %w", err)
	}
	r, err := NewReader(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

// NewReader reads and checks the header line of the history in in: it must be a JSON object
// with "verity_history": 1. A missing, malformed or other-version header is an error.
func NewReader(in io.Reader) (*Reader, error) {
	r := &Reader{br: bufio.NewReaderSize(in, readBuffer), dec: newDecoder(), last: -1}
	line, complete, err := r.readLine(1)
	if errors.Is(err, io.EOF) {
		return nil, errors.New("history: empty input: missing the header line")
	}
	if err != nil {
		return nil, err
	}
	r.line = 1
	if !complete && !json.Valid(line) {
		return nil, &LineError{Line: 1, Err: errors.New("torn header: the run wrote no complete line")}
	}
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, &LineError{Line: 1, Err: fmt.Errorf("header: %w", err)}
	}
	switch h.Version {
	case Version:
	case 0:
		return nil, &LineError{Line: 1, Err: errors.New(`header: no "verity_history" field: not a Verity history`)}
	default:
		return nil, &LineError{Line: 1, Err: fmt.Errorf("header: verity_history %d: this reader reads version %d", h.Version, Version)}
	}
	r.header = h
	return r, nil
}

// Header returns the history's header line.
func (r *Reader) Header() Header { return r.header }

// Next reads the next event into *op (see Reader for how long its contents stay valid). It
// returns io.EOF at the end. A last line that ends without a newline and is not valid JSON is
// what a run killed mid-write leaves: Next skips it, returns io.EOF and Torn reports it. Any
// other bad line is a *LineError, and so is every later call's result.
func (r *Reader) Next(op *Op) error {
	if r.err != nil {
		return r.err
	}
	if r.ahead != nil {
		return r.nextAhead(op)
	}
	for {
		line, complete, err := r.readLine(r.line + 1)
		if err != nil {
			r.err = err
			return err
		}
		r.line++
		blank, err := r.dec.line(line, complete, r.line, op)
		if blank {
			continue
		}
		if err != nil {
			if err == io.EOF {
				r.torn = r.line
			}
			r.err = err
			return err
		}
		return r.follow(op)
	}
}

// line decodes line number n of the file into op; complete tells whether the line ended with a
// newline. It reports blank for a line of whitespace only, which carries nothing (tolerating
// them costs nothing and helps hand-made files). Otherwise a bad line is a *LineError, except a
// last line that ends without a newline and is not valid JSON: that is what a run killed
// mid-write leaves, and line returns io.EOF for it.
func (d *decoder) line(line []byte, complete bool, n int, op *Op) (blank bool, err error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return true, nil
	}
	if err := d.op(line, op); err != nil {
		if !complete && !json.Valid(line) {
			return false, io.EOF
		}
		return false, &LineError{Line: n, Err: err}
	}
	return false, nil
}

// follow checks that op, just read from line r.line, comes after the op before it.
func (r *Reader) follow(op *Op) error {
	if op.Index <= r.last {
		r.err = &LineError{Line: r.line, Err: fmt.Errorf("i %d does not follow i %d: i must increase strictly", op.Index, r.last)}
		return r.err
	}
	r.last = op.Index
	return nil
}

// Torn returns the 1-based line number of the torn last line that Next skipped, or 0.
func (r *Reader) Torn() int { return r.torn }

// Line returns the number of the last line read (the header is line 1).
func (r *Reader) Line() int { return r.line }

// Close closes the file that Open opened; for a NewReader it does nothing. It also stops the
// goroutines that ReadAhead started.
func (r *Reader) Close() error {
	if r.ahead != nil {
		r.ahead.stop()
	}
	if r.closer == nil {
		return nil
	}
	c := r.closer
	r.closer = nil
	if err := c.Close(); err != nil {
		return fmt.Errorf("history: close: %w", err)
	}
	return nil
}

// readLine returns the next line, which is line number n of the file, without its newline, and
// whether it had one (only the last line of a file can lack it). The line is valid until the
// next call. It returns io.EOF when no bytes are left.
func (r *Reader) readLine(n int) (line []byte, complete bool, err error) {
	b, err := r.br.ReadSlice('\n')
	if err == nil {
		return b[:len(b)-1], true, nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer (a big final-read chunk): assemble it in r.long.
		if cap(r.long) > keepLong {
			r.long = nil
		}
		r.long = append(r.long[:0], b...)
		for {
			b, err = r.br.ReadSlice('\n')
			if len(r.long)+len(b) > MaxLineBytes {
				return nil, false, &LineError{Line: n, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
			}
			r.long = append(r.long, b...)
			if err == nil {
				return r.long[:len(r.long)-1], true, nil
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		b = r.long
	}
	if errors.Is(err, io.EOF) {
		if len(b) == 0 {
			return nil, false, io.EOF
		}
		return b, false, nil
	}
	return nil, false, fmt.Errorf("history: reading line %d: %w", n, err)
}
