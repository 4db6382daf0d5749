package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// Reading ahead: a checker spends about as long decoding a history's lines as judging them, so
// ReadAhead moves the decoding off the caller's goroutine and spreads it over several:
//
//	lines goroutine  reads the file in big pieces into blocks of whole lines (readLines), and
//	                 deals the blocks to the workers in turn
//	workers          each splits its blocks into lines and decodes them, one block after the
//	                 other, into batches of ops that own their payloads (opBatch, payloads),
//	                 with a decoder of its own
//	Next             takes the batches from the workers in the order the blocks were dealt,
//	                 so that the ops come out in file order, and hands them out one by one
//
// Every line goes through the same decoder.line as Next's own loop, and Next applies the same
// check of i's order, and readLines gives readLine's errors, so what Next returns — ops,
// errors, Line, Torn — is what it returns without ReadAhead. Blocks and batches are recycled, so memory stays bounded by the few in
// flight.

const (
	aheadBlock = 512 << 10 // bytes of lines per block, at least (a longer line is a block alone)
	aheadQueue = 2         // blocks or batches waiting per worker
)

// ReadAhead makes Next decode ahead of its caller with workers goroutines (at least one) besides
// the one that reads lines. Call it before the first Next; Close stops the goroutines, so a
// Reader that reads ahead must be closed. The ops Next returns follow Reader's rules of
// lifetime: they are valid until the next call of Next.
func (r *Reader) ReadAhead(workers int) { r.readAhead(workers, aheadBlock) }

// readAhead is ReadAhead with blocks of about blockBytes (the tests make them small).
func (r *Reader) readAhead(workers, blockBytes int) {
	if r.ahead != nil || r.err != nil {
		return
	}
	workers = max(workers, 1)
	a := &readAhead{
		in:          make([]chan *lineBlock, workers),
		out:         make([]chan *opBatch, workers),
		freeBlocks:  make(chan *lineBlock, workers*(aheadQueue+1)+1),
		freeBatches: make(chan *opBatch, workers*(aheadQueue+1)+1),
		done:        make(chan struct{}),
		blockBytes:  blockBytes,
	}
	for w := range workers {
		a.in[w] = make(chan *lineBlock, aheadQueue)
		a.out[w] = make(chan *opBatch, aheadQueue)
	}
	a.wg.Add(1 + workers)
	go a.readLines(r, r.line)
	for w := range workers {
		go a.decode(a.in[w], a.out[w], newDecoder())
	}
	r.ahead = a
}

type readAhead struct {
	in          []chan *lineBlock // to each worker, in turn
	out         []chan *opBatch   // from each worker, in the same turn
	freeBlocks  chan *lineBlock   // blocks the workers are done with
	freeBatches chan *opBatch     // batches Next is done with
	done        chan struct{}     // closed by stop
	blockBytes  int               // a block takes lines until it holds this many bytes
	wg          sync.WaitGroup
	stopped     bool

	// Next's side.
	cur  *opBatch // the batch whose ops Next is handing out
	k    int      // the next of them
	turn int      // the worker whose batch comes next
}

// lineBlock is a run of consecutive whole lines of the file, each with its newline but the
// file's last line when it has none.
type lineBlock struct {
	data  []byte
	first int // the number of its first line
	// err is what reading stopped at after these lines (io.EOF at the end), or nil.
	err error
}

// opBatch is the decoded ops of one block and, once they run out, how Next goes on.
type opBatch struct {
	ops   []Op
	lines []int // the line of each op

	// end, when not nil, is what Next returns after the ops, and every time after (the
	// reading's error or io.EOF, a bad line's *LineError); endLine is Line's value then, and
	// torn Torn's.
	end     error
	endLine int
	torn    int

	// The payloads of ops, which the worker's decoder decodes into directly (decoder.own);
	// the batch keeps their arrays from one use to the next.
	payloads
}

// readLines reads the file after line `after` (the header) in pieces straight into blocks,
// cuts each block after its last newline (the partial line after it begins the next block),
// and deals the blocks to the workers in turn, until the end of the file, an error, or stop.
// The workers find the lines in their blocks: this goroutine only counts them. Its errors are
// readLine's: a line longer than MaxLineBytes, or the reading's error naming the line it was
// reading; the whole lines before either still go to the workers.
func (a *readAhead) readLines(r *Reader, after int) {
	defer a.wg.Done()
	n := after // the lines before the next block
	var carry []byte
	for turn := 0; ; turn = (turn + 1) % len(a.in) {
		var blk *lineBlock
		select {
		case blk = <-a.freeBlocks:
		default:
			// Room for a read of readBuffer bytes or more: bufio reads that straight into
			// the block instead of through its own buffer.
			blk = &lineBlock{data: make([]byte, 0, a.blockBytes+readBuffer)}
		}
		data := append(blk.data[:0], carry...)
		cut := -1 // the end of data's last newline, -1 when it has none
		var err error
		for err == nil && (cut < 0 || len(data) < a.blockBytes) {
			if len(data) > MaxLineBytes { // a line longer than that, however it ends
				break
			}
			if cap(data)-len(data) < readBuffer {
				data = slices.Grow(data, readBuffer) // a line longer than a block
			}
			var m int
			m, err = r.br.Read(data[len(data):cap(data)])
			if i := bytes.LastIndexByte(data[len(data):len(data)+m], '\n'); i >= 0 {
				cut = len(data) + i + 1
			}
			data = data[:len(data)+m]
		}
		if len(data) > MaxLineBytes {
			// Only the block's first line can be that long (a block grows past its size
			// only while it holds no newline); readLine's bound counts the newline.
			if first := bytes.IndexByte(data, '\n'); first < 0 || first+1 > MaxLineBytes {
				data, cut, err = data[:0], 0, &LineError{Line: n + 1, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
			}
		}
		whole := max(cut, 0)
		switch {
		case errors.Is(err, io.EOF):
			whole, err = len(data), io.EOF // the last line, with or without its newline
		case err != nil:
			if _, ok := err.(*LineError); !ok {
				err = fmt.Errorf("history: reading line %d: %w", n+bytes.Count(data[:whole], []byte{'\n'})+1, err)
			}
		}
		carry = append(carry[:0], data[whole:]...)
		blk.data, blk.first, blk.err = data[:whole], n+1, err
		n += bytes.Count(blk.data, []byte{'\n'})
		select {
		case a.in[turn] <- blk:
		case <-a.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// decode decodes the blocks of in into batches on out, stopping at the first bad line, the
// block that ends the file, or stop.
func (a *readAhead) decode(in <-chan *lineBlock, out chan<- *opBatch, dec *decoder) {
	defer a.wg.Done()
	for {
		var blk *lineBlock
		select {
		case blk = <-in:
		case <-a.done:
			return
		}
		var b *opBatch
		select {
		case b = <-a.freeBatches:
		default:
			b = &opBatch{}
		}
		b.reset()
		dec.own = &b.payloads
		n := blk.first - 1 // the last line read
		for rest := blk.data; len(rest) > 0; {
			line, complete := rest, false // the file's last line may lack its newline
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line, rest, complete = rest[:i], rest[i+1:], true
			} else {
				rest = nil
			}
			n++
			// The op is decoded in its place in the batch, its payload into the batch's.
			b.ops = append(b.ops, Op{})
			blank, err := dec.line(line, complete, n, &b.ops[len(b.ops)-1])
			if blank || err != nil {
				b.ops = b.ops[:len(b.ops)-1]
			}
			if blank {
				continue
			}
			if err != nil {
				b.end, b.endLine = err, n
				if err == io.EOF {
					b.torn = n
				}
				break
			}
			b.lines = append(b.lines, n)
		}
		dec.own = nil
		if b.end == nil && blk.err != nil {
			b.end, b.endLine = blk.err, n
		}
		last := b.end != nil
		if cap(blk.data) <= 2*(a.blockBytes+readBuffer) { // a block that took a very long line is let go
			select {
			case a.freeBlocks <- blk:
			default:
			}
		}
		select {
		case out <- b:
		case <-a.done:
			return
		}
		if last {
			return
		}
	}
}

// nextAhead is Next when reading ahead.
func (r *Reader) nextAhead(op *Op) error {
	a := r.ahead
	for {
		if b := a.cur; b != nil {
			if a.k < len(b.ops) {
				*op = b.ops[a.k]
				r.line = b.lines[a.k]
				a.k++
				return r.follow(op)
			}
			if b.end != nil {
				r.line, r.err = b.endLine, b.end
				if b.torn > 0 {
					r.torn = b.torn
				}
				return r.err
			}
			// The caller is done with the batch's ops: the workers may fill it again.
			a.cur = nil
			select {
			case a.freeBatches <- b:
			default:
			}
		}
		select {
		case a.cur = <-a.out[a.turn]:
		case <-a.done:
			r.err = fmt.Errorf("history: reading line %d: %w", r.line+1, os.ErrClosed)
			return r.err
		}
		a.k, a.turn = 0, (a.turn+1)%len(a.out)
	}
}

// stop ends the goroutines and waits for them.
func (a *readAhead) stop() {
	if a.stopped {
		return
	}
	a.stopped = true
	close(a.done)
	a.wg.Wait()
}

func (b *opBatch) reset() {
	b.ops, b.lines = b.ops[:0], b.lines[:0]
	b.end, b.endLine, b.torn = nil, 0, 0
	b.payloads.reset()
}
