package lazyfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// rig is a store mounted through the lazy filesystem; tests change files through the mount and
// cut the power between mounts.
type rig struct {
	t     testing.TB
	store string
	mnt   string
	srv   *Server
}

// requireFUSE skips a test that cannot mount FUSE here, except in CI, which must.
func requireFUSE(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if _, err := os.Stat("/dev/fuse"); err != nil {
		why = "no /dev/fuse"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cannot mount FUSE: %s", why)
	}
	t.Skipf("cannot mount FUSE: %s", why)
}

func newRig(t testing.TB) *rig {
	t.Helper()
	requireFUSE(t)
	r := &rig{t: t, store: t.TempDir(), mnt: t.TempDir()}
	_, err := Prepare(r.store, 0, 0)
	require.NoError(t, err)
	r.mount()
	t.Cleanup(func() {
		if r.srv == nil {
			return
		}
		if err := r.srv.Unmount(); err != nil {
			t.Error(err)
			_ = unix.Unmount(r.mnt, unix.MNT_DETACH) // a failed test may have left files open
		}
	})
	return r
}

func (r *rig) mount() {
	r.t.Helper()
	log := slog.New(slog.NewTextHandler(tWriter{r.t}, nil))
	srv, err := Mount(context.Background(), r.mnt, r.store, Options{Logger: log})
	require.NoError(r.t, err)
	r.srv = srv
}

func (r *rig) unmount() {
	r.t.Helper()
	require.NoError(r.t, r.srv.Unmount())
	r.srv = nil
}

// powerCut cuts the power and starts again: what was not durable is gone.
func (r *rig) powerCut() Drop {
	r.t.Helper()
	r.unmount()
	require.NoError(r.t, Cut(r.store))
	d, err := Prepare(r.store, 0, 0)
	require.NoError(r.t, err)
	require.True(r.t, d.Cut)
	require.NoFileExists(r.t, filepath.Join(r.store, cutMark), "Prepare removes the mark")
	r.mount()
	return d
}

// restart stops and starts again without a power cut: everything written stays.
func (r *rig) restart() {
	r.t.Helper()
	r.unmount()
	d, err := Prepare(r.store, 0, 0)
	require.NoError(r.t, err)
	require.Equal(r.t, Drop{}, d)
	r.mount()
}

func (r *rig) path(name string) string { return filepath.Join(r.mnt, name) }

// put creates (or empties) name with data, fsyncing it if sync.
func (r *rig) put(name, data string, sync bool) {
	r.t.Helper()
	f, err := os.Create(r.path(name))
	require.NoError(r.t, err)
	_, err = f.WriteString(data)
	require.NoError(r.t, err)
	if sync {
		require.NoError(r.t, f.Sync())
	}
	require.NoError(r.t, f.Close())
}

// writeAt writes data at off in the existing file name, fsyncing it if sync.
func (r *rig) writeAt(name, data string, off int64, sync bool) {
	r.t.Helper()
	f, err := os.OpenFile(r.path(name), os.O_WRONLY, 0)
	require.NoError(r.t, err)
	_, err = f.WriteAt([]byte(data), off)
	require.NoError(r.t, err)
	if sync {
		require.NoError(r.t, f.Sync())
	}
	require.NoError(r.t, f.Close())
}

func (r *rig) fsync(name string) {
	r.t.Helper()
	f, err := os.Open(r.path(name))
	require.NoError(r.t, err)
	require.NoError(r.t, f.Sync())
	require.NoError(r.t, f.Close())
}

func (r *rig) read(name string) string {
	r.t.Helper()
	b, err := os.ReadFile(r.path(name))
	require.NoError(r.t, err)
	return string(b)
}

// durable puts name in place with data, durable both in content and name.
func (r *rig) durable(name, data string) {
	r.t.Helper()
	r.put(name, data, true)
	r.fsync(filepath.Dir(name))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

func TestFsyncedWriteSurvives(t *testing.T) {
	r := newRig(t)
	r.put("a", "hello, durable", true)
	require.Equal(t, Drop{Cut: true}, r.powerCut())
	require.Equal(t, "hello, durable", r.read("a"), "a file's fsync makes its data and its new name durable")
}

func TestUnsyncedWritesAreLost(t *testing.T) {
	r := newRig(t)
	r.durable("a", "base")
	r.writeAt("a", "-tail-", 4, false)
	r.put("b", string(bytes.Repeat([]byte("b"), 50)), false)
	require.Equal(t, "base-tail-", r.read("a"), "live has the write")

	require.Equal(t, Drop{Cut: true, Files: 2, Bytes: 6 + 50}, r.powerCut())
	require.Equal(t, "base", r.read("a"))
	require.NoFileExists(t, r.path("b"))

	rec, err := os.ReadFile(filepath.Join(r.store, dropFile))
	require.NoError(t, err)
	var got struct {
		Files, Bytes int64
		At           string
	}
	require.NoError(t, json.Unmarshal(rec, &got))
	require.Equal(t, int64(2), got.Files)
	require.Equal(t, int64(56), got.Bytes)
	require.NotEmpty(t, got.At)
}

func TestPartialSyncKeepsTheFirstWrite(t *testing.T) {
	r := newRig(t)
	f, err := os.Create(r.path("seg"))
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("AAAA"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.WriteAt([]byte("BBBB"), 4)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	require.Equal(t, Drop{Cut: true, Files: 1, Bytes: 4}, r.powerCut())
	require.Equal(t, "AAAA", r.read("seg"))
}

func TestOverwriteWithoutSyncRestoresTheOldBytes(t *testing.T) {
	r := newRig(t)
	r.durable("a", "0123456789")
	r.writeAt("a", "xx", 3, false)
	require.Equal(t, "012xx56789", r.read("a"))

	require.Equal(t, Drop{Cut: true, Files: 1, Bytes: 2}, r.powerCut())
	require.Equal(t, "0123456789", r.read("a"))
}

func TestRename(t *testing.T) {
	for _, dirSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("directory fsync %v", dirSync), func(t *testing.T) {
			r := newRig(t)
			r.durable("a", "content")
			require.NoError(t, os.Rename(r.path("a"), r.path("b")))
			if dirSync {
				r.fsync(".")
			}
			r.powerCut()
			kept, gone := "b", "a"
			if !dirSync {
				kept, gone = "a", "b"
			}
			require.Equal(t, "content", r.read(kept))
			require.NoFileExists(t, r.path(gone))
		})
	}
}

// Kafka's checkpoint files: a temporary file written and fsynced, renamed over the old one, the
// directory fsynced.
func TestRenameReplacingATarget(t *testing.T) {
	for _, dirSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("directory fsync %v", dirSync), func(t *testing.T) {
			r := newRig(t)
			r.durable("cp", "old")
			r.put("cp.tmp", "new", true)
			require.NoError(t, os.Rename(r.path("cp.tmp"), r.path("cp")))
			if dirSync {
				r.fsync(".")
			}
			d := r.powerCut()
			if dirSync {
				require.Equal(t, Drop{Cut: true}, d)
				require.Equal(t, "new", r.read("cp"))
				require.NoFileExists(t, r.path("cp.tmp"))
				return
			}
			// Live's cp held the new bytes, which durable has under the temporary name only.
			require.Equal(t, Drop{Cut: true, Files: 1, Bytes: 3}, d)
			require.Equal(t, "old", r.read("cp"), "the replaced target comes back")
			require.Equal(t, "new", r.read("cp.tmp"), "the new file's fsync made its name durable")
		})
	}
}

// Kafka's segment replaced at the same base offset: the old one renamed away, a new one made
// under its name and fsynced, no directory fsync. The new file's fsync commits the journal up to
// its own creation, so the rename before it is durable too and the old data is not lost.
func TestNewFileUnderARenamedName(t *testing.T) {
	r := newRig(t)
	r.durable("0.log", "old segment")
	require.NoError(t, os.Rename(r.path("0.log"), r.path("0.log.deleted")))
	r.put("0.log", "new segment", true)
	require.NoError(t, os.Mkdir(r.path("later"), 0o755)) // after the fsync: not committed

	require.Equal(t, Drop{Cut: true}, r.powerCut())
	require.Equal(t, "new segment", r.read("0.log"))
	require.Equal(t, "old segment", r.read("0.log.deleted"))
	require.NoDirExists(t, r.path("later"))
}

func TestCreateWithoutFsyncIsLost(t *testing.T) {
	r := newRig(t)
	r.put("c", "12345", false)
	require.NoError(t, os.Mkdir(r.path("d"), 0o755))
	r.put("d/e", "678", false)

	require.Equal(t, Drop{Cut: true, Files: 2, Bytes: 8}, r.powerCut())
	require.NoFileExists(t, r.path("c"))
	require.NoDirExists(t, r.path("d"))
}

func TestUnlinkAndRmdir(t *testing.T) {
	for _, dirSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("directory fsync %v", dirSync), func(t *testing.T) {
			r := newRig(t)
			require.NoError(t, os.Mkdir(r.path("d"), 0o750))
			r.durable("a", "still here")
			require.NoError(t, os.Remove(r.path("a")))
			require.NoError(t, os.Remove(r.path("d")))
			if dirSync {
				r.fsync(".")
			}
			r.powerCut()
			if dirSync {
				require.NoFileExists(t, r.path("a"))
				require.NoDirExists(t, r.path("d"))
				return
			}
			require.Equal(t, "still here", r.read("a"))
			st, err := os.Stat(r.path("d"))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o750), st.Mode().Perm(), "the directory comes back with its mode")
		})
	}
}

func TestDirectoryRename(t *testing.T) {
	t.Run("without directory fsync", func(t *testing.T) {
		r := newRig(t)
		require.NoError(t, os.Mkdir(r.path("d"), 0o755))
		r.fsync(".")
		r.durable("d/f", "v1")
		r.restart() // a file untouched since the mount: its durable copy is at its live path
		require.NoError(t, os.Rename(r.path("d"), r.path("e")))
		// The data is durable, under the name durable still has.
		r.writeAt("e/f", "v2", 0, true)
		r.powerCut()
		require.Equal(t, "v2", r.read("d/f"))
		require.NoDirExists(t, r.path("e"))
	})
	t.Run("with directory fsync", func(t *testing.T) {
		r := newRig(t)
		require.NoError(t, os.Mkdir(r.path("d"), 0o755))
		r.fsync(".")
		r.durable("d/f", "v1")
		require.NoError(t, os.Rename(r.path("d"), r.path("e")))
		r.fsync(".")
		r.writeAt("e/f", "v2", 0, true)
		r.powerCut()
		require.Equal(t, "v2", r.read("e/f"))
		require.NoDirExists(t, r.path("d"))
	})
}

func TestTruncate(t *testing.T) {
	orig := string(bytes.Repeat([]byte("x"), 100))
	cases := []struct {
		name  string
		sizes []int64
		sync  bool
		want  string
		drop  Drop
	}{
		{"shrink, fsync", []int64{10}, true, orig[:10], Drop{Cut: true}},
		{"shrink, no fsync", []int64{10}, false, orig, Drop{Cut: true, Files: 1}},
		{"grow, fsync", []int64{200}, true, orig + string(make([]byte, 100)), Drop{Cut: true}},
		{"grow, no fsync", []int64{200}, false, orig, Drop{Cut: true, Files: 1, Bytes: 100}},
		{"shrink then grow, fsync", []int64{10, 100}, true, orig[:10] + string(make([]byte, 90)), Drop{Cut: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.durable("a", orig)
			f, err := os.OpenFile(r.path("a"), os.O_RDWR, 0)
			require.NoError(t, err)
			// By path (SETATTR without a handle) first, by descriptor after.
			require.NoError(t, os.Truncate(r.path("a"), c.sizes[0]))
			for _, sz := range c.sizes[1:] {
				require.NoError(t, f.Truncate(sz))
			}
			if c.sync {
				require.NoError(t, f.Sync())
			}
			require.NoError(t, f.Close())
			require.Equal(t, c.drop, r.powerCut())
			require.Equal(t, c.want, r.read("a"))
		})
	}
}

// mmapData is what the mmap tests write through a shared mapping.
const mmapData = "written through a shared mapping"

// mmapChildEnv makes the test binary the child that writes through the mapping (TestMain). It
// must be another process: a page fault on the mount blocks its thread in the kernel until the
// filesystem answers, and a garbage collection in the process serving it would wait for that
// thread forever.
const mmapChildEnv = "LAZYFS_TEST_MMAP"

func TestMain(m *testing.M) {
	if spec := os.Getenv(mmapChildEnv); spec != "" {
		how, path, _ := strings.Cut(spec, ":")
		if err := mmapChild(path, how); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mmapChild writes mmapData at offset 4096 of path through a shared writable mapping, then makes
// it durable with how ("msync", "fsync" or nothing).
func mmapChild(path, how string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(m[4096:], mmapData)
	switch how {
	case "msync":
		err = unix.Msync(m, unix.MS_SYNC)
	case "fsync":
		err = f.Sync()
	}
	return errors.Join(err, unix.Munmap(m), f.Close())
}

// mmapWrite makes name an 8 KiB durable file and has a child process write mmapData into it.
func mmapWrite(r *rig, name, how string) {
	r.t.Helper()
	r.durable(name, string(make([]byte, 8192)))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), mmapChildEnv+"="+how+":"+r.path(name))
	out, err := cmd.CombinedOutput()
	require.NoError(r.t, err, "%s", out)
}

func TestMmap(t *testing.T) {
	at := func(r *rig) string { return r.read("idx")[4096 : 4096+len(mmapData)] }
	for _, how := range []string{"msync", "fsync"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t)
			mmapWrite(r, "idx", how)
			require.Equal(t, Drop{Cut: true}, r.powerCut())
			require.Equal(t, mmapData, at(r))
		})
	}
	t.Run("no sync, power cut", func(t *testing.T) {
		r := newRig(t)
		mmapWrite(r, "idx", "")
		require.Equal(t, Drop{Cut: true, Files: 1, Bytes: int64(len(mmapData))}, r.powerCut())
		require.Equal(t, string(make([]byte, 8192)), r.read("idx"))
	})
	t.Run("no sync, kill", func(t *testing.T) {
		r := newRig(t)
		mmapWrite(r, "idx", "")
		r.restart()
		require.Equal(t, mmapData, at(r), "writeback reached live")
	})
}

func TestCopyFileRange(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("fsync %v", sync), func(t *testing.T) {
			r := newRig(t)
			r.durable("src", "copied bytes")
			r.durable("dst", "")
			in, err := os.Open(r.path("src"))
			require.NoError(t, err)
			out, err := os.OpenFile(r.path("dst"), os.O_WRONLY, 0)
			require.NoError(t, err)
			n, err := unix.CopyFileRange(int(in.Fd()), nil, int(out.Fd()), nil, 12, 0)
			require.NoError(t, err)
			require.Equal(t, 12, n)
			if sync {
				require.NoError(t, out.Sync())
			}
			require.NoError(t, errors.Join(in.Close(), out.Close()))
			r.powerCut()
			want := ""
			if sync {
				want = "copied bytes"
			}
			require.Equal(t, want, r.read("dst"))
		})
	}
}

func TestPunchHole(t *testing.T) {
	r := newRig(t)
	r.durable("a", string(bytes.Repeat([]byte("x"), 8192)))
	f, err := os.OpenFile(r.path("a"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096))
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	r.powerCut()
	require.Equal(t, string(make([]byte, 4096))+string(bytes.Repeat([]byte("x"), 4096)), r.read("a"))
}

func TestPrepareWithoutCutKeepsEverything(t *testing.T) {
	r := newRig(t)
	r.put("a", "never fsynced", false)
	require.NoError(t, os.MkdirAll(r.path("d/e"), 0o700))
	r.put("d/e/f", "deep", false)
	r.restart()
	require.Equal(t, "never fsynced", r.read("a"))
	require.Equal(t, "deep", r.read("d/e/f"))
	got, err := os.ReadFile(filepath.Join(r.store, durableDir, "d/e/f"))
	require.NoError(t, err)
	require.Equal(t, "deep", string(got), "durable is a copy of live")

	require.Equal(t, Drop{Cut: true}, r.powerCut(), "a power cut right after loses nothing")
	require.Equal(t, "never fsynced", r.read("a"))
	st, err := os.Stat(r.path("d/e"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

func TestRefused(t *testing.T) {
	r := newRig(t)
	r.put("a", "x", false)
	require.ErrorIs(t, os.Link(r.path("a"), r.path("b")), syscall.ENOTSUP)
	require.ErrorIs(t, os.Symlink("a", r.path("c")), syscall.ENOTSUP)
	r.put("d", "y", false)
	err := unix.Renameat2(unix.AT_FDCWD, r.path("a"), unix.AT_FDCWD, r.path("d"), unix.RENAME_EXCHANGE)
	require.ErrorIs(t, err, syscall.ENOTSUP)
	require.ErrorIs(t, unix.Setxattr(r.path("a"), "user.k", []byte("v"), 0), syscall.ENOTSUP)
	require.Equal(t, "x", r.read("a"))
}

// Writers append to their own files and fsync now and then while another goroutine creates,
// renames and fsyncs directories: each file keeps exactly what its last fsync covered.
func TestConcurrentWriters(t *testing.T) {
	r := newRig(t)
	const writers, writes, chunk = 6, 120, 1000
	for i := range writers {
		r.put(fmt.Sprintf("w%d", i), "", true)
	}
	r.fsync(".")
	var wg sync.WaitGroup
	tails := make([]int, writers)
	for i := range writers {
		wg.Go(func() {
			f, err := os.OpenFile(r.path(fmt.Sprintf("w%d", i)), os.O_WRONLY|os.O_APPEND, 0)
			if !assertNoError(t, err) {
				return
			}
			defer f.Close()
			for k := range writes {
				_, err := f.Write(bytes.Repeat([]byte{byte('a' + i)}, chunk))
				if k%10 == 9 && err == nil {
					err = f.Sync()
				}
				if !assertNoError(t, err) {
					return
				}
			}
			tails[i] = 10 + i
			_, err = f.Write(make([]byte, tails[i]))
			assertNoError(t, err)
		})
	}
	wg.Go(func() {
		for k := range 40 {
			name := fmt.Sprintf("n%d", k)
			if !assertNoError(t, os.Mkdir(r.path(name), 0o755)) {
				return
			}
			f, err := os.Create(r.path(name + "/x"))
			if !assertNoError(t, err) {
				return
			}
			f.Close()
			assertNoError(t, os.Rename(r.path(name+"/x"), r.path(name+"/y")))
			d, err := os.Open(r.mnt)
			if !assertNoError(t, err) {
				return
			}
			assertNoError(t, d.Sync())
			d.Close()
		}
	})
	wg.Wait()
	var lost int64
	for _, n := range tails {
		lost += int64(n)
	}
	require.Equal(t, Drop{Cut: true, Files: writers, Bytes: lost}, r.powerCut())
	for i := range writers {
		require.Equal(t, string(bytes.Repeat([]byte{byte('a' + i)}, writes*chunk)), r.read(fmt.Sprintf("w%d", i)))
	}
	for k := range 40 {
		require.FileExists(t, r.path(fmt.Sprintf("n%d/y", k)))
	}
}

// assertNoError is require.NoError for goroutines other than the test's own.
func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func TestSpansAdd(t *testing.T) {
	var s spans
	s = s.add(10, 20)
	s = s.add(30, 40)
	s = s.add(0, 5)
	require.Equal(t, spans{{0, 5}, {10, 20}, {30, 40}}, s)
	s = s.add(20, 30) // touches both neighbours
	require.Equal(t, spans{{0, 5}, {10, 40}}, s)
	s = s.add(3, 12)
	require.Equal(t, spans{{0, 40}}, s)
	s = s.add(50, 50) // empty
	require.Equal(t, spans{{0, 40}}, s)
}

// BenchmarkAppend appends 4 KiB at a time with an fsync every 1 MiB, through the lazy
// filesystem and straight to a directory of the disk under it.
func BenchmarkAppend(b *testing.B) {
	b.Run("lazyfs", func(b *testing.B) { appendLoop(b, newRig(b).mnt) })
	b.Run("plain", func(b *testing.B) { appendLoop(b, b.TempDir()) })
}

func appendLoop(b *testing.B, dir string) {
	const block, syncEvery, rewindAt = 4096, 256, 64 << 20
	f, err := os.Create(filepath.Join(dir, "segment"))
	require.NoError(b, err)
	defer f.Close()
	buf := bytes.Repeat([]byte("k"), block)
	b.SetBytes(block)
	var n int64
	for b.Loop() {
		_, err := f.Write(buf)
		require.NoError(b, err)
		n += block
		if n%(syncEvery*block) == 0 {
			require.NoError(b, f.Sync())
		}
		if n%rewindAt == 0 { // keep the file, and the disk it uses, bounded
			require.NoError(b, f.Truncate(0))
			_, err := f.Seek(0, 0)
			require.NoError(b, err)
		}
	}
}

// Sync makes everything durable, as a machine left running would: unsynced data, a new file, a
// rename and an unlink all survive the next power cut; what is written after it does not. The
// same goes through RequestSync and AnswerSync, the daemon's control.
func TestSync(t *testing.T) {
	for _, how := range []string{"Sync", "RequestSync"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t)
			r.durable("old", "old")
			r.durable("gone", "gone")
			r.put("new", "new data", false)
			r.writeAt("old", "OLD", 0, false)
			require.NoError(t, os.Rename(r.path("new"), r.path("renamed")))
			require.NoError(t, os.Remove(r.path("gone")))
			require.NoError(t, os.Mkdir(r.path("dir"), 0o755))
			r.put("dir/inner", "inner", false)
			switch how {
			case "Sync":
				require.NoError(t, r.srv.Sync())
			case "RequestSync":
				require.NoError(t, Announce(r.store))
				syncs := make(chan os.Signal, 1)
				signal.Notify(syncs, syscall.SIGUSR1)
				defer signal.Stop(syncs)
				go func() {
					<-syncs
					assert.NoError(t, r.srv.AnswerSync(r.store))
				}()
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				require.NoError(t, RequestSync(ctx, r.store))
			}
			r.writeAt("old", "x", 10, false)
			d := r.powerCut()
			require.Equal(t, Drop{Cut: true, Files: 1, Bytes: 8}, d, "only the write after the sync is lost")
			require.Equal(t, "OLD", r.read("old"))
			require.Equal(t, "new data", r.read("renamed"))
			require.Equal(t, "inner", r.read("dir/inner"))
			require.NoFileExists(t, r.path("new"))
			require.NoFileExists(t, r.path("gone"))
		})
	}
}
