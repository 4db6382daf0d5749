package history

import (
	"fmt"
	"os"
	"time"
)

// AppendBatch appends ops as consecutive events, in order, with a single Write call. It is for a
// client that has several events at one moment — an asynchronous producer handing a batch of
// records to its client, or receiving a burst of acknowledgements — and would otherwise pay a
// write per event. Each op is checked and gets its i and t as Append gives them (one t for the
// whole batch: the moment of the write, which for an invoke is before the records are handed
// over and for a completion after the answers arrived, so no op's interval shrinks). ops is
// updated in place and returned.
//
// All or nothing: an op that could not be read back fails the batch before anything is written;
// a failed write fails the writer, as in Append.
func (w *Writer) AppendBatch(ops []Op) ([]Op, error) {
	if len(ops) == 0 {
		return ops, nil
	}
	for i := range ops {
		if err := ops[i].checkShape(); err != nil {
			return nil, fmt.Errorf("history: append batch: op %d (%s %s): %w", i, ops[i].Type, ops[i].F, err)
		}
	}
	// Encode the tails outside the lock, as Append does; only the prefixes wait for i and t.
	tp, _ := w.bufs.Get().(*[]byte)
	if tp == nil {
		tp = new([]byte)
	}
	lp, _ := w.bufs.Get().(*[]byte)
	if lp == nil {
		lp = new([]byte)
	}
	defer func() {
		for _, p := range []*[]byte{tp, lp} {
			if cap(*p) <= maxPooledLine {
				w.bufs.Put(p)
			}
		}
	}()
	tails := (*tp)[:0]
	var endsBuf [64]int
	ends := endsBuf[:0]
	for i := range ops {
		var err error
		if tails, err = appendOpTail(tails, &ops[i]); err != nil {
			*tp = tails
			return nil, fmt.Errorf("history: append batch: op %d (%s %s): %w", i, ops[i].Type, ops[i].F, err)
		}
		tails = append(tails, '\n')
		ends = append(ends, len(tails))
	}
	*tp = tails

	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return nil, fmt.Errorf("history: append batch: %w", os.ErrClosed)
	case w.err != nil:
		return nil, w.err
	}
	t := int64(time.Since(w.start))
	lines := (*lp)[:0]
	start := 0
	for i := range ops {
		ops[i].Index, ops[i].Time = w.next+int64(i), t
		if err := ops[i].checkOf(); err != nil {
			*lp = lines
			return nil, fmt.Errorf("history: append batch: op %d (%s %s): %w", i, ops[i].Type, ops[i].F, err)
		}
		lines = appendPrefix(lines, ops[i].Index, t)
		lines = append(lines, tails[start:ends[i]]...)
		start = ends[i]
	}
	*lp = lines
	n, err := w.out.Write(lines)
	w.bytes.Add(int64(n))
	if err != nil {
		w.err = fmt.Errorf("history: write ops %d..%d: %w", w.next, w.next+int64(len(ops))-1, err)
		return nil, w.err
	}
	w.next += int64(len(ops))
	w.count.Add(int64(len(ops)))
	return ops, nil
}
