package main

import (
	"strings"
	"testing"
)

// A completion whose "of" names no pending invoke of its process (here: one already completed)
// is a malformed history: exit 2 with one line that names the line of the completion.
func TestCheckMalformedCompletion(t *testing.T) {
	resent := `{"i":2,"t":3,"p":1,"type":"ok","f":"send","of":0,"value":{"topic":"t","partition":0,"offset":1,"value":"1-1"}}` + "\n"
	final := `{"i":3,"t":4,"p":9,"type":"ok","f":"final-read","value":{"topic":"t","partition":0,"isolation":"read_uncommitted","from":0,"end":2,"records":[{"topic":"t","partition":0,"offset":0,"value":"1-1"},{"topic":"t","partition":0,"offset":1,"value":"1-1"}]}}` + "\n"
	code, stdout, stderr := runCLI("check", writeFile(t, header+"\n"+sendOK+resent+final))
	if code != exitUsage {
		t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
	}
	if !strings.Contains(stderr, "line 4") {
		t.Errorf("stderr does not name line 4: %q", stderr)
	}
	if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 {
		t.Errorf("an error must be one line, got %d:\n%s", n+1, stderr)
	}
}
