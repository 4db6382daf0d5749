package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/harness/harnesstest"
)

func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }

// TestRunInterruptLeavesNothing: Ctrl-C during `verity run` ends it with exit 2 and a message,
// and removes the cluster: nothing labelled io.verity.run is left.
func TestRunInterruptLeavesNothing(t *testing.T) {
	harnesstest.RequireDocker(t)
	bin := filepath.Join(t.TempDir(), "verity")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building verity: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	before, err := harness.LeftoversByRun(ctx)
	if err != nil {
		t.Fatalf("listing runs before: %v", err)
	}
	cmd := exec.CommandContext(ctx, bin, "run", "--duration", "2m", "--out", t.TempDir())
	cmd.Env = append(os.Environ(), "TESTCONTAINERS_RYUK_DISABLED=true")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the workloads run: the cluster, its proxies and the clients are all up.
	running := make(chan struct{})
	var lines []string
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if !once && strings.Contains(sc.Text(), "running") && strings.Contains(sc.Text(), "workload") {
				once = true
				close(running)
			}
		}
	}()
	select {
	case <-running:
	case <-ctx.Done():
		t.Fatal("the run never started its workloads")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-scanned
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
		t.Errorf("exit %v, want %d", err, exitUsage)
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, "interrupted") {
		t.Errorf("last line %q: want it to say the run was interrupted", last)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	left, err := harnesstest.LeftSince(lctx, before)
	if err != nil || len(left) > 0 {
		t.Errorf("after Ctrl-C: leftovers %v (%v)", left, err)
	}
}
