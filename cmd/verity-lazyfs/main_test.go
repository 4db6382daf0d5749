package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-kafka/verity/lazyfs"
	"github.com/verity-kafka/verity/lazyfs/control"
)

// runCmd runs the command line args with stdin and returns the exit code, stdout and stderr.
func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, stdio{strings.NewReader(stdin), &out, &errOut})
	return code, out.String(), errOut.String()
}

func TestFaultUsage(t *testing.T) {
	store := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"rules":[{"kind":"slow","op":"fsync","path":"**","delay":"soon"}]}`), 0o644))
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"fault", "-store", store}, "fault takes one of -set, -clear, -status"},
		{"", []string{"fault", "-store", store, "-clear", "-status"}, "fault takes one of"},
		{"", []string{"cut", "-store", store, "-clear"}, "-set, -clear and -status are fault's"},
		{"", []string{"fault", "-store", store, "-set", bad}, `rules[0]: delay "soon": not a Go duration`},
		{`{"rules":[{"kind":"error","op":"write","path":"**","afterbytes":3}]}`, []string{"fault", "-store", store, "-set", "-"}, `unknown field "afterbytes"`},
		{`{"rules":[{"kind":"error","op":"write","path":"a/[x"}]}`, []string{"fault", "-store", store, "-set", "-"}, `rules[0]: path: "a/[x": segment "[x": syntax error in pattern`},
		{`{"rules":[]}`, []string{"fault", "-store", store, "-set", "-"}, "rules: none given"},
	} {
		code, _, stderr := runCmd(t, c.stdin, c.args...)
		assert.Equal(t, exitUsage, code, "%v", c.args)
		assert.Contains(t, stderr, c.want, "%v", c.args)
	}
	// With no faults ever set the status is empty, not an error; nor is there a daemon to ask.
	code, stdout, stderr := runCmd(t, "", "fault", "-store", store, "-status")
	require.Equal(t, 0, code, stderr)
	var st control.FaultStatus
	require.NoError(t, json.Unmarshal([]byte(stdout), &st))
	require.Equal(t, control.FaultStatus{Rules: []control.RuleStatus{}}, st)
	code, _, stderr = runCmd(t, "", "fault", "-store", store, "-clear")
	require.Equal(t, exitFailed, code)
	require.Contains(t, stderr, "finding the daemon")
}

// fault -set, -status and -clear against a daemon served in this process, as serve does.
func TestFaultCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cannot mount FUSE: not root")
	} else if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("cannot mount FUSE: no /dev/fuse")
	}
	store, mnt := t.TempDir(), t.TempDir()
	_, err := lazyfs.Prepare(store, 0, 0)
	require.NoError(t, err)
	srv, err := lazyfs.Mount(t.Context(), mnt, store, lazyfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, srv.Unmount()) })
	requests := make(chan os.Signal, 2)
	signal.Notify(requests, syscall.SIGUSR2)
	defer signal.Stop(requests)
	require.NoError(t, lazyfs.Announce(store))
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-requests:
				_ = srv.AnswerFaults()
			case <-done:
				return
			}
		}
	}()
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "a.log"), []byte("base"), 0o644))

	code, _, stderr := runCmd(t, `{"rules":[{"kind":"error","op":"write","path":"*.log"}]}`, "fault", "-store", store, "-set", "-")
	require.Equal(t, 0, code, stderr)
	err = os.WriteFile(filepath.Join(mnt, "a.log"), []byte("new"), 0o644)
	require.ErrorIs(t, err, syscall.EIO)

	status := func() control.FaultStatus {
		code, stdout, stderr := runCmd(t, "", "fault", "-store", store, "-status")
		require.Equal(t, 0, code, stderr)
		var st control.FaultStatus
		require.NoError(t, json.Unmarshal([]byte(stdout), &st))
		return st
	}
	require.Eventually(t, func() bool {
		st := status()
		return st.Active && len(st.Rules) == 1 && st.Rules[0].Hits == 1
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"a.log"}, status().Rules[0].Paths)

	code, _, stderr = runCmd(t, "", "fault", "-store", store, "-clear")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "a.log"), []byte("new"), 0o644))
	st := status()
	require.False(t, st.Active)
	require.Equal(t, int64(1), st.Rules[0].Hits, "clearing keeps the status")
}
