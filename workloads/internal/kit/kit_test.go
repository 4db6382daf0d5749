package kit

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestWaitUntil(t *testing.T) {
	calls := 0
	err := WaitUntil(t.Context(), time.Now().Add(time.Minute), time.Millisecond, func() (bool, error) {
		calls++
		return calls == 3, errors.New("not yet")
	})
	if err != nil || calls != 3 {
		t.Fatalf("a condition that holds at the third look: err %v after %d looks", err, calls)
	}

	err = WaitUntil(t.Context(), time.Now(), time.Millisecond, func() (bool, error) { return false, errors.New("still 3 behind") })
	if err == nil || !strings.Contains(err.Error(), "deadline passed: still 3 behind") {
		t.Fatalf("a deadline passed says the last error: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err = WaitUntil(ctx, time.Now().Add(time.Minute), time.Millisecond, func() (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended context ends the wait: %v", err)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep in an ended context: %v", err)
	}
	if err := Sleep(t.Context(), 0); err != nil {
		t.Fatalf("no pause: %v", err)
	}
}

// A close that never returns is left behind, and the log says so.
func TestCloseWithinLeavesAHungCloseBehind(t *testing.T) {
	var b strings.Builder
	hung := make(chan struct{})
	defer close(hung)
	CloseWithin(slog.New(slog.NewTextHandler(&b, nil)), "test client", time.Millisecond, func() { <-hung })
	if !strings.Contains(b.String(), "test client still closing; left to finish in the background") {
		t.Fatalf("log: %q", b.String())
	}
	ran := false
	CloseWithin(slog.New(slog.NewTextHandler(&b, nil)), "quick client", time.Hour, func() { ran = true })
	if !ran {
		t.Fatal("a close that returns is waited for")
	}
}

// The queue never blocks its pusher, and a take returns everything pushed, in order.
func TestQueue(t *testing.T) {
	q := NewQueue[int]()
	for i := range 1000 {
		q.Push(i)
	}
	select {
	case <-q.Ready():
	default:
		t.Fatal("pushes signal the queue")
	}
	got := q.Take(nil)
	if len(got) != 1000 {
		t.Fatalf("took %d of 1000", len(got))
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d is %d", i, v)
		}
	}
	q.Push(7)
	again := q.Take(got[:0])
	if len(again) != 1 || again[0] != 7 {
		t.Fatalf("a second take: %v", again)
	}
	q.Drop()
	q.Push(8)
	if rest := q.Take(nil); len(rest) != 0 {
		t.Fatalf("items pushed after Drop are discarded: %v", rest)
	}
}
