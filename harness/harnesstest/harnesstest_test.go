package harnesstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/harness"
)

func TestIsCI(t *testing.T) {
	for _, v := range []string{"true", "TRUE", "True", "1", "t", "T", "yes", "YES", "Yes", "y", "on", "ON", "On", " true ", "true\n"} {
		if !IsCI(v) {
			t.Errorf("IsCI(%q) = false, want true", v)
		}
	}
	for _, v := range []string{"", "false", "FALSE", "0", "f", "no", "n", "off", "2", "truthy", "enabled"} {
		if IsCI(v) {
			t.Errorf("IsCI(%q) = true, want false", v)
		}
	}
}

func TestOnEngine(t *testing.T) {
	down := errors.New("no Docker engine answers")
	for _, c := range []struct {
		ci   string
		err  error
		want engineAction
	}{
		{"true", nil, engineUse},
		{"", nil, engineUse},
		{"true", down, engineFail},
		{"1", down, engineFail},
		{"yes", down, engineFail},
		{"On", down, engineFail},
		{"", down, engineSkip},
		{"false", down, engineSkip},
		{"0", down, engineSkip},
	} {
		if got := onEngine(c.ci, c.err); got != c.want {
			t.Errorf("onEngine(%q, %v) = %d, want %d", c.ci, c.err, got, c.want)
		}
	}
}

// fakeTB records how requireDocker ends a test. Fatal and Skip end the calling goroutine, as the
// testing package's do; the embedded nil TB makes any other call panic, which fails the test.
type fakeTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Skip(args ...any) {
	f.skipped, f.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

// runFake runs body with a fakeTB in its own goroutine (Goexit must not end the test's) and
// returns the fake once body has returned or ended the goroutine.
func runFake(body func(testing.TB)) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(f)
	}()
	<-done
	return f
}

// A missing engine fails the test under CI, whichever truthy spelling CI has, and skips it
// elsewhere; -short skips before the engine is asked.
func TestRequireDockerWithoutEngine(t *testing.T) {
	down := func(context.Context) error { return errors.New("no Docker engine answers") }
	up := func(context.Context) error { return nil }
	for _, ci := range []string{"true", "1", "yes", "on", "TRUE"} {
		f := runFake(func(tb testing.TB) { requireDocker(tb, false, ci, down) })
		if !f.failed || f.skipped {
			t.Errorf("CI=%s, no engine: failed %t, skipped %t (%s); want a failure", ci, f.failed, f.skipped, f.msg)
		}
	}
	for _, ci := range []string{"", "false", "0"} {
		f := runFake(func(tb testing.TB) { requireDocker(tb, false, ci, down) })
		if f.failed || !f.skipped {
			t.Errorf("CI=%q, no engine: failed %t, skipped %t (%s); want a skip", ci, f.failed, f.skipped, f.msg)
		}
	}
	if f := runFake(func(tb testing.TB) { requireDocker(tb, false, "1", up) }); f.failed || f.skipped {
		t.Errorf("CI=1, engine up: failed %t, skipped %t (%s); want the test to go on", f.failed, f.skipped, f.msg)
	}
	asked := false
	f := runFake(func(tb testing.TB) {
		requireDocker(tb, true, "1", func(context.Context) error { asked = true; return nil })
	})
	if !f.skipped || asked {
		t.Errorf("-short: skipped %t, engine asked %t; want a skip before asking", f.skipped, asked)
	}
}

// The same with the real harness.Ping and DOCKER_HOST at a closed port on this machine: the
// harness checks the engine DOCKER_HOST names before anything else, so this needs no Docker and
// fails fast (connection refused).
func TestRequireDockerClosedPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "tcp://"+addr)
	f := runFake(func(tb testing.TB) { requireDocker(tb, false, "1", harness.Ping) })
	if !f.failed || f.skipped {
		t.Fatalf("CI=1, DOCKER_HOST=tcp://%s: failed %t, skipped %t (%s); want a failure", addr, f.failed, f.skipped, f.msg)
	}
	if !strings.Contains(f.msg, "Docker is not usable") || !strings.Contains(f.msg, addr) {
		t.Errorf("the failure should say the engine at %s is not usable: %s", addr, f.msg)
	}
	t.Logf("CI=1, DOCKER_HOST=tcp://%s: %s", addr, f.msg)
	f = runFake(func(tb testing.TB) { requireDocker(tb, false, "", harness.Ping) })
	if f.failed || !f.skipped {
		t.Errorf("CI unset, DOCKER_HOST=tcp://%s: failed %t, skipped %t (%s); want a skip", addr, f.failed, f.skipped, f.msg)
	}
}
