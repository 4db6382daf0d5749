// Package kit holds the small waits the workload roles and the client folders share: a
// condition polled until a deadline, pacing that ends with its context, and a close bounded in
// time. It imports no Kafka library.
package kit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// WaitUntil polls cond every interval until it holds, ctx ends or the deadline passes. It is
// how workloads wait for a condition they cannot be told about (a partition's LSO to reach its
// HW): never a bare sleep standing in for synchronisation.
func WaitUntil(ctx context.Context, deadline time.Time, interval time.Duration, cond func() (bool, error)) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-t.C:
		}
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if !time.Now().Before(deadline) {
			if last != nil {
				return fmt.Errorf("deadline passed: %w", last)
			}
			return fmt.Errorf("deadline passed")
		}
		t.Reset(min(interval, max(time.Until(deadline), time.Millisecond)))
	}
}

// Sleep waits d or until ctx ends, whichever is first. It is used for pacing (a rate limit, a
// backoff before retrying a refused request), never as synchronisation.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// CloseWithin runs closeFn, waiting for it at most bound: a client closing against a cluster
// that no longer answers is left to finish in the background, so that the workload returns.
func CloseWithin(log *slog.Logger, what string, bound time.Duration, closeFn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		closeFn()
	}()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn(what+" still closing; left to finish in the background", "waited", bound)
	}
}

// OrDiscard is l, or a logger that discards everything when l is nil.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Queue is an unbounded queue of a client's answers. The client's side pushes without ever
// blocking, so that a client holding a record back until its earlier answers are taken
// (sarama's full channels, franz-go's buffer limit) cannot deadlock with a role that is waiting
// to hand it that record; the role takes everything waiting at once.
type Queue[T any] struct {
	mu      sync.Mutex
	items   []T
	dropped bool
	signal  chan struct{} // capacity 1: something was pushed since the last take
}

func NewQueue[T any]() *Queue[T] { return &Queue[T]{signal: make(chan struct{}, 1)} }

// Push adds as, unless the queue was dropped.
func (q *Queue[T]) Push(as ...T) {
	q.mu.Lock()
	if !q.dropped {
		q.items = append(q.items, as...)
	}
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Ready is signalled when something was pushed since the last Take.
func (q *Queue[T]) Ready() <-chan struct{} { return q.signal }

// Take appends every waiting item to buf. The queue keeps buf's old array for the next items,
// so that two slices are reused alternately.
func (q *Queue[T]) Take(buf []T) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(buf) == 0 && len(q.items) > 0 {
		buf, q.items = q.items, buf[:0]
		return buf
	}
	buf = append(buf, q.items...)
	clear(q.items)
	q.items = q.items[:0]
	return buf
}

// Drop discards what is waiting and everything pushed later: nobody reads any more.
func (q *Queue[T]) Drop() {
	q.mu.Lock()
	q.dropped = true
	q.items = nil
	q.mu.Unlock()
}
