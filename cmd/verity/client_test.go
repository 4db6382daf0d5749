package main

import (
	"bytes"
	"github.com/verity-kafka/verity/workloads/kclient/remote"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"verity", "client", "check"}, &out, &errb); code != exitUsage {
		t.Fatalf("check without a program: exit %d, %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "check needs the program to check") {
		t.Errorf("stderr: %s", errb.String())
	}
	errb.Reset()
	if code := run(t.Context(), []string{"verity", "client", "serve", "--client", "librdkafka"}, &out, &errb); code != exitUsage {
		t.Fatalf("serve of an unknown client: exit %d, %s", code, errb.String())
	}
}

// The reference program keeps the protocol's rules: verity client serve holds up under verity
// client check (sarama here; franz-go waits a minute for brokers that never answer).
func TestClientServeKeepsTheRules(t *testing.T) {
	if testing.Short() {
		t.Skip("builds verity")
	}
	bin := filepath.Join(t.TempDir(), "verity")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building verity: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "client", "check", "--", bin, "client", "serve", "--client", "sarama").CombinedOutput()
	if err != nil {
		t.Fatalf("verity client check: %v\n%s", err, out)
	}
	kept := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ok ") {
			kept++
		}
	}
	if want := len(remote.Conformances()); kept != want {
		t.Errorf("want every one of the %d rules kept, %d were:\n%s", want, kept, out)
	}
}
