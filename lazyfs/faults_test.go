package lazyfs

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/lazyfs/control"
	"golang.org/x/sys/unix"
)

func (r *rig) setFaults(rules ...control.DiskFault) {
	r.t.Helper()
	require.NoError(r.t, r.srv.SetFaults(rules))
}

// tryWrite writes data at off in the existing file name and returns the error.
func (r *rig) tryWrite(name, data string, off int64) error {
	r.t.Helper()
	f, err := os.OpenFile(r.path(name), os.O_WRONLY, 0)
	require.NoError(r.t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte(data), off)
	return err
}

// tryFsync fsyncs name and returns the error.
func (r *rig) tryFsync(name string) error {
	r.t.Helper()
	f, err := os.Open(r.path(name))
	require.NoError(r.t, err)
	defer f.Close()
	return f.Sync()
}

func (r *rig) liveFile(name string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.store, liveDir, name))
	require.NoError(r.t, err)
	return string(b)
}

// ruleStatus is the status of the only rule set.
func (r *rig) ruleStatus() control.RuleStatus {
	r.t.Helper()
	st := r.srv.FaultStatus()
	require.Len(r.t, st.Rules, 1)
	return st.Rules[0]
}

// A write to a matching path fails with EIO and changes nothing, not live, not what a power cut
// would drop; one to another path goes through. The status names the path.
func TestFaultWriteError(t *testing.T) {
	r := newRig(t)
	require.NoError(t, os.Mkdir(r.path("logs"), 0o755))
	r.durable("logs/a.log", "base")
	r.durable("logs/a.index", "base")
	r.setFaults(control.DiskFault{Kind: control.KindError, Op: control.OpWrite, Path: "*/*.log"})

	require.ErrorIs(t, r.tryWrite("logs/a.log", "XX", 2), syscall.EIO)
	require.ErrorIs(t, r.tryWrite("logs/a.log", "YY", 4), syscall.EIO, "until cleared")
	require.NoError(t, r.tryWrite("logs/a.index", "-idx", 4))
	require.Equal(t, "base", r.liveFile("logs/a.log"))
	require.Equal(t, "base", r.read("logs/a.log"))

	rs := r.ruleStatus()
	require.Equal(t, int64(2), rs.Hits)
	require.Equal(t, []string{"logs/a.log"}, rs.Paths)
	require.NotEmpty(t, rs.FirstHit)

	// Only the write that went through was pending.
	require.Equal(t, Drop{Cut: true, Files: 1, Bytes: 4}, r.powerCut())
	require.Equal(t, "base", r.read("logs/a.log"))
}

// A once rule fails exactly one call, however many race for it.
func TestFaultOnce(t *testing.T) {
	r := newRig(t)
	const n = 16
	for i := range n {
		r.durable(filepath.Join("f"+string(rune('a'+i))), "")
	}
	r.setFaults(control.DiskFault{Kind: control.KindError, Op: control.OpWrite, Path: "**", Once: true})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = r.tryWrite("f"+string(rune('a'+i)), "data", 0) })
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			require.ErrorIs(t, err, syscall.EIO)
			failed++
		}
	}
	require.Equal(t, 1, failed)
	require.NoError(t, r.tryWrite("fa", "more", 0), "spent")
	require.Equal(t, int64(1), r.ruleStatus().Hits)
}

// A failed fsync or fdatasync makes nothing durable, even with faults still set at the power
// cut; nor does a failed fsync of a directory commit a name.
func TestFaultFsyncError(t *testing.T) {
	r := newRig(t)
	r.durable("a", "base")
	r.setFaults(control.DiskFault{Kind: control.KindError, Op: control.OpFsync, Path: "a"})
	r.writeAt("a", "NEW!", 0, false)
	require.ErrorIs(t, r.tryFsync("a"), syscall.EIO)
	f, err := os.OpenFile(r.path("a"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.ErrorIs(t, unix.Fdatasync(int(f.Fd())), syscall.EIO)
	require.NoError(t, f.Close())
	require.Equal(t, "NEW!", r.read("a"), "live keeps the write")
	require.Equal(t, int64(2), r.ruleStatus().Hits)

	require.Equal(t, Drop{Cut: true, Files: 1, Bytes: 4}, r.powerCut())
	require.Equal(t, "base", r.read("a"))

	r.put("new", "", false)
	r.setFaults(control.DiskFault{Kind: control.KindError, Op: control.OpFsync, Path: "**"})
	require.ErrorIs(t, r.tryFsync("."), syscall.EIO)
	require.Equal(t, []string{""}, r.ruleStatus().Paths, "the root's path is empty")
	r.powerCut()
	require.NoFileExists(t, r.path("new"))
}

// A full disk takes after_bytes: the writes that fit succeed, the one crossing it fails whole
// and a smaller one that still fits succeeds. With no room left creating a file fails and
// statfs reports no free space.
func TestFaultFull(t *testing.T) {
	r := newRig(t)
	r.durable("seg", "")
	var before unix.Statfs_t
	require.NoError(t, unix.Statfs(r.mnt, &before))
	require.NotZero(t, before.Bavail)
	r.setFaults(control.DiskFault{Kind: control.KindFull, Path: "**", AfterBytes: 10})

	f, err := os.OpenFile(r.path("seg"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("1234")
	require.NoError(t, err)
	_, err = f.WriteString("5678")
	require.NoError(t, err)
	_, err = f.WriteString("9abc")
	require.ErrorIs(t, err, syscall.ENOSPC, "8+4 > 10")
	require.Equal(t, "12345678", r.liveFile("seg"), "the failed write wrote nothing")
	_, err = f.WriteString("9a")
	require.NoError(t, err, "2 bytes still fit")

	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(r.mnt, &st))
	require.Zero(t, st.Bavail)
	require.Zero(t, st.Bfree)
	_, err = os.Create(r.path("other"))
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoFileExists(t, r.path("other"))

	rs := r.ruleStatus()
	require.Equal(t, int64(10), rs.Written)
	require.Equal(t, int64(2), rs.Hits, "the crossing write and the create")
	require.Equal(t, []string{"seg", "other"}, rs.Paths)

	require.NoError(t, r.srv.ClearFaults())
	_, err = f.WriteString("more")
	require.NoError(t, err)
	require.NoError(t, unix.Statfs(r.mnt, &st))
	require.NotZero(t, st.Bavail)
}

// A full disk with no room fails the creation of a file at once, on its paths only.
func TestFaultFullAtOnce(t *testing.T) {
	r := newRig(t)
	require.NoError(t, os.Mkdir(r.path("meta"), 0o755))
	r.setFaults(control.DiskFault{Kind: control.KindFull, Op: control.OpWrite, Path: "meta/**"})
	_, err := os.Create(r.path("meta/x"))
	require.ErrorIs(t, err, syscall.ENOSPC)
	r.put("elsewhere", "fine", true)
}

// A slow fsync or write takes at least its delay, then does its work.
func TestFaultSlow(t *testing.T) {
	const delay = 150 * time.Millisecond
	r := newRig(t)
	r.durable("a", "base")
	r.setFaults(
		control.DiskFault{Kind: control.KindSlow, Op: control.OpFsync, Path: "a", Delay: delay.String()},
		control.DiskFault{Kind: control.KindSlow, Op: control.OpWrite, Path: "b", Delay: delay.String(), Once: true},
	)
	r.writeAt("a", "NEW!", 0, false)
	start := time.Now()
	require.NoError(t, r.tryFsync("a"))
	require.GreaterOrEqual(t, time.Since(start), delay)

	r.put("b", "", false)
	start = time.Now()
	require.NoError(t, r.tryWrite("b", "slow", 0))
	require.GreaterOrEqual(t, time.Since(start), delay)

	st := r.srv.FaultStatus()
	require.Equal(t, int64(1), st.Rules[0].Hits)
	require.Equal(t, int64(1), st.Rules[1].Hits)
	require.Equal(t, Drop{Cut: true, Files: 1, Bytes: 4}, r.powerCut(), "b was not fsynced")
	require.Equal(t, "NEW!", r.read("a"), "the slow fsync made a durable")
}

// A read the kernel sends fails on a matching path only.
func TestFaultReadError(t *testing.T) {
	r := newRig(t)
	r.durable("a", "aaaa")
	r.durable("b", "bbbb")
	r.setFaults(control.DiskFault{Kind: control.KindError, Op: control.OpRead, Path: "a"})
	_, err := os.ReadFile(r.path("a"))
	require.ErrorIs(t, err, syscall.EIO)
	require.Equal(t, "bbbb", r.read("b"))
}

// Clearing restores normal behaviour and leaves the status readable, in the store too.
func TestFaultClear(t *testing.T) {
	r := newRig(t)
	r.durable("a", "base")
	r.setFaults(control.DiskFault{Kind: control.KindError, Op: control.OpWrite, Path: "*"})
	require.ErrorIs(t, r.tryWrite("a", "x", 0), syscall.EIO)
	require.Eventually(t, func() bool {
		st, err := ReadFaultStatus(r.store)
		return err == nil && len(st.Rules) == 1 && st.Rules[0].Hits == 1
	}, 5*time.Second, 10*time.Millisecond, "a hit reaches the status file")

	require.NoError(t, r.srv.ClearFaults())
	require.NoError(t, r.tryWrite("a", "x", 0))
	r.put("b", "b", true)
	st, err := ReadFaultStatus(r.store)
	require.NoError(t, err)
	require.False(t, st.Active)
	require.NotEmpty(t, st.ClearedAt)
	require.Equal(t, int64(1), st.Rules[0].Hits)
	require.Equal(t, []string{"a"}, st.Rules[0].Paths)
}

// A rule that does not parse is refused and sets nothing, leaving the rules in force.
func TestFaultBadSpecSetsNothing(t *testing.T) {
	r := newRig(t)
	r.durable("a", "base")
	r.setFaults(control.DiskFault{Kind: control.KindError, Op: control.OpWrite, Path: "a"})
	err := r.srv.SetFaults([]control.DiskFault{
		{Kind: control.KindError, Op: control.OpRead, Path: "b"},
		{Kind: control.KindError, Op: control.OpWrite, Path: "logs/[x"},
	})
	require.ErrorContains(t, err, "rules[1]: path:")
	require.ErrorIs(t, r.tryWrite("a", "x", 0), syscall.EIO, "the rule before stays")
}

// RequestFaults and AnswerFaults, the daemon's control, set and clear faults; a new daemon
// (Announce) ends the faults of the one before.
func TestRequestFaults(t *testing.T) {
	r := newRig(t)
	r.durable("a", "base")
	require.NoError(t, Announce(r.store))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-sigs:
				_ = r.srv.AnswerFaults()
			case <-done:
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	rule := control.DiskFault{Kind: control.KindError, Op: control.OpWrite, Path: "a", Once: true}
	require.NoError(t, RequestFaults(ctx, r.store, control.FaultRequest{Action: control.ActionSet, Rules: []control.DiskFault{rule}}))
	st, err := ReadFaultStatus(r.store)
	require.NoError(t, err)
	require.True(t, st.Active)
	require.Equal(t, []control.RuleStatus{{Rule: rule}}, st.Rules)
	require.ErrorIs(t, r.tryWrite("a", "x", 0), syscall.EIO)

	err = RequestFaults(ctx, r.store, control.FaultRequest{Action: control.ActionSet, Rules: []control.DiskFault{{Kind: "boom", Path: "a"}}})
	require.ErrorContains(t, err, `kind "boom"`)

	require.NoError(t, RequestFaults(ctx, r.store, control.FaultRequest{Action: control.ActionClear}))
	st, err = ReadFaultStatus(r.store)
	require.NoError(t, err)
	require.False(t, st.Active)
	require.Equal(t, int64(1), st.Rules[0].Hits)

	require.NoError(t, RequestFaults(ctx, r.store, control.FaultRequest{Action: control.ActionSet, Rules: []control.DiskFault{rule}}))
	require.NoError(t, Announce(r.store))
	st, err = ReadFaultStatus(r.store)
	require.NoError(t, err)
	assert.False(t, st.Active, "a new daemon starts with no faults")
	assert.NotEmpty(t, st.ClearedAt)
	assert.NoFileExists(t, filepath.Join(r.store, control.FaultRequestFile))
}

// A request made while the store's daemon is starting (its node's container just started)
// waits for it to announce itself, rather than signal the pid of the daemon before it; a store
// that no daemon ever served answers at once.
func TestRequestWaitsForAStartingDaemon(t *testing.T) {
	r := newRig(t)
	require.NoError(t, Announce(r.store))
	_, err := Prepare(r.store, os.Getuid(), os.Getgid()) // a new daemon's start
	require.NoError(t, err)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		time.Sleep(200 * time.Millisecond) // the start's copy of its store
		if err := Announce(r.store); err != nil {
			t.Error(err)
			return
		}
		<-sigs
		_ = r.srv.AnswerFaults()
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rule := control.DiskFault{Kind: control.KindError, Op: control.OpWrite, Path: "a"}
	require.NoError(t, RequestFaults(ctx, r.store, control.FaultRequest{Action: control.ActionSet, Rules: []control.DiskFault{rule}}))
	<-answered
	st, err := ReadFaultStatus(r.store)
	require.NoError(t, err)
	require.True(t, st.Active, "the request set after the start is in force")

	err = RequestFaults(ctx, t.TempDir(), control.FaultRequest{Action: control.ActionClear})
	require.ErrorContains(t, err, "finding the daemon")
}

// BenchmarkWriteFaults rewrites 4 KiB through the mount with no faults set and with one rule
// for writes that matches no path: the cost of the check on the hot path.
func BenchmarkWriteFaults(b *testing.B) {
	for _, c := range []struct {
		name  string
		rules []control.DiskFault
	}{
		{"none", nil},
		{"nonmatching", []control.DiskFault{{Kind: control.KindError, Op: control.OpWrite, Path: "verity-0/__cluster_metadata-0/*.log"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := newRig(b)
			if c.rules != nil {
				require.NoError(b, r.srv.SetFaults(c.rules))
			}
			f, err := os.Create(r.path("segment"))
			require.NoError(b, err)
			defer f.Close()
			buf := make([]byte, 4096)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				if _, err := f.WriteAt(buf, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFaultCheck is the check alone, without FUSE: no faults, and one rule that does not
// match (its path is given, as livePath would make it).
func BenchmarkFaultCheck(b *testing.B) {
	l := newLazyFS(b.TempDir(), nil)
	b.Run("none", func(b *testing.B) {
		for b.Loop() {
			if rules := l.faultsFor(opWrite); rules != nil {
				b.Fatal("rules")
			}
		}
	})
	fs, err := compileFaults([]control.DiskFault{{Kind: control.KindError, Op: control.OpWrite, Path: "verity-0/__cluster_metadata-0/*.log"}})
	require.NoError(b, err)
	l.faults.Store(fs)
	b.Run("nonmatching", func(b *testing.B) {
		for b.Loop() {
			if rules := l.faultsFor(opWrite); rules != nil {
				if l.inject(context.Background(), rules, "verity-0/orders-0/00000000000000000000.log", 4096) != 0 {
					b.Fatal("hit")
				}
			}
		}
	})
}
