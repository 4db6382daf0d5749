package lazyfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Control files of a running daemon, in the store.
const (
	daemonPid = "daemon.pid"
	// daemonStarting is daemon.pid's content from a daemon's start until it announces itself.
	daemonStarting = "starting"
	syncRequest    = "sync-request"
	syncDone       = "sync-done"
)

// Sync makes durable everything live holds, as the kernel's writeback and the filesystem's next
// journal commit would on a machine left running: every pending name change, then every file's
// unsynced data. It is sync(2) for this filesystem.
func (s *Server) Sync() error { return s.lz.syncAll() }

func (l *lazyFS) syncAll() error {
	l.mu.Lock()
	err := l.commit(l.seq)
	// With the journal committed, a named file's durable path is also its live path.
	named := map[uint64]*fileState{}
	for ino, s := range l.files {
		if s.durable != "" {
			named[ino] = s
		}
	}
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("committing the journal: %w", err)
	}
	var errs []error
	for ino, s := range named {
		errs = append(errs, l.syncTracked(ino, s))
	}
	return errors.Join(errs...)
}

// syncTracked syncs the file with live inode ino. It is skipped when its durable path no longer
// leads to that inode in live: a rename after the commit above, whose own commit will follow.
func (l *lazyFS) syncTracked(ino uint64, s *fileState) error {
	l.mu.Lock()
	p := s.durable
	l.mu.Unlock()
	if p == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(l.live, p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("opening %s to sync it: %w", p, err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Ino != ino {
		return nil
	}
	if err := l.syncFile(s, func() (string, bool) { return p, true }, int(f.Fd())); err != nil {
		return fmt.Errorf("syncing %s: %w", p, err)
	}
	return nil
}

// Announce records the calling process as store's daemon, to which RequestSync and
// RequestFaults signal. It first ends the faults of any daemon before it: they were in its
// memory only.
func Announce(store string) error {
	if err := endFaults(store); err != nil {
		return fmt.Errorf("ending the faults of the last daemon: %w", err)
	}
	if err := writeAtomic(store, daemonPid, []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
		return fmt.Errorf("recording the daemon's pid: %w", err)
	}
	return nil
}

// RequestSync asks store's daemon (SIGUSR1) to Sync, and waits until it has answered this
// request.
func RequestSync(ctx context.Context, store string) error {
	pid, err := awaitDaemon(ctx, store)
	if err != nil {
		return err
	}
	nonce := []byte(strconv.FormatInt(time.Now().UnixNano(), 10) + "\n")
	if err := writeAtomic(store, syncRequest, nonce); err != nil {
		return fmt.Errorf("requesting a sync: %w", err)
	}
	if err := signalDaemon(pid, syscall.SIGUSR1); err != nil {
		return err
	}
	err = awaitAnswer(ctx, store, syncDone, func(done []byte) bool { return bytes.Equal(done, nonce) })
	if err != nil {
		return fmt.Errorf("waiting for the daemon's sync: %w", err)
	}
	return nil
}

// awaitDaemon returns the pid of store's daemon, waiting while one is starting. A starting
// daemon (its node's container just started) has replaced the pid of the one before it with
// daemonStarting (Prepare) and announces its pid once it listens for requests: a request sent
// after that is neither lost nor cleared by its start.
func awaitDaemon(ctx context.Context, store string) (int, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(filepath.Join(store, daemonPid))
		if err != nil {
			return 0, fmt.Errorf("finding the daemon of %s: %w", store, err)
		}
		if got := string(bytes.TrimSpace(b)); got != daemonStarting {
			pid, err := strconv.Atoi(got)
			if err != nil {
				return 0, fmt.Errorf("finding the daemon of %s: %q is not a pid", store, b)
			}
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("finding the daemon of %s: it is still starting: %w", store, ctx.Err())
		case <-tick.C:
		}
	}
}

// signalDaemon sends sig to the daemon's pid.
func signalDaemon(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signalling the daemon (pid %d): %w", pid, err)
	}
	return nil
}

// awaitAnswer waits until the store's file name holds what answered says is the answer.
func awaitAnswer(ctx context.Context, store, name string, answered func([]byte) bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(filepath.Join(store, name)); err == nil && answered(b) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// AnswerSync serves a RequestSync: Sync, then mark the request done (even when the sync failed:
// the error goes to the daemon's log, and the requester must not wait forever).
func (s *Server) AnswerSync(store string) error {
	nonce, err := os.ReadFile(filepath.Join(store, syncRequest))
	if err != nil {
		return fmt.Errorf("reading the sync request: %w", err)
	}
	syncErr := s.Sync()
	return errors.Join(syncErr, writeAtomic(store, syncDone, nonce))
}
