package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, def, _ := runCLI("list", "--yaml", "power-loss-controllers")
	if code != exitPass {
		t.Fatalf("list --yaml: exit %d", code)
	}
	good := write("good.yaml", def)
	bad := write("bad.yaml", strings.Replace(def, "fault: power-loss", "fault: power-los", 1))
	few := write("few.yaml", strings.Replace(def, "nodes: 3", "nodes: 1", 1))
	// A claim the scenario's own settings deny: the run refuses it before it starts, so must
	// validate.
	claim := write("claim.yaml", strings.Replace(def, "expect:\n", "expect:\n  permitted: [lost-write]\n", 1))

	code, out, errOut := runCLI("validate", good)
	if code != exitPass || !strings.Contains(out, "good.yaml: ok: scenario power-loss-controllers, seed 1, 2m") || errOut != "" {
		t.Errorf("a valid file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCLI("validate", good, bad, few, claim, filepath.Join(dir, "missing.yaml"))
	if code != exitUsage {
		t.Errorf("invalid files: exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(out, "good.yaml: ok") {
		t.Errorf("the valid file among them is still reported: %q", out)
	}
	for _, want := range []string{`"power-los"`, "did you mean power-loss?", "few.yaml", "claim.yaml", "missing.yaml"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := strings.Count(errOut, "\n"); n != 4 {
		t.Errorf("one line per bad file, got %d:\n%s", n, errOut)
	}
	if code, _, errOut := runCLI("validate"); code != exitUsage || !strings.Contains(errOut, "one or more scenario files") {
		t.Errorf("no file: exit %d, %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI("version")
	if code != exitPass {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"verity ", "go1.", "client sarama v1.", "client franz-go v1.", "verity/kafka:4.3.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("version lacks %q:\n%s", want, out)
		}
	}
}

func TestNumberFlagsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"matrix", "--runs", "x", "--acks", "1,all"}, `--runs: "x": want a whole number`},
		{[]string{"run", "--duration", "5x"}, `--duration: "5x": want a duration`},
		{[]string{"run", "--seed", "x"}, `--seed: "x": want a whole number`},
		{[]string{"run", "--fault", "kil"}, "did you mean kill?"},
	} {
		code, _, errOut := runCLI(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "strconv") {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}
