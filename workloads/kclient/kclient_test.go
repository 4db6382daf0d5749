package kclient

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/verity-kafka/verity/history"
)

func TestKeyPartitionIsTheJavaClients(t *testing.T) {
	// The murmur2 values of Kafka's UtilsTest; partition = toPositive(murmur2) % n.
	for _, c := range []struct {
		key  string
		hash int32
	}{{"21", -973932308}, {"foobar", -790332482}, {"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829}, {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107}, {"", 275646681}} {
		if got := int32(murmur2([]byte(c.key))); got != c.hash {
			t.Errorf("murmur2(%q) = %d, Kafka's is %d", c.key, got, c.hash)
		}
		for _, n := range []int32{1, 7, 12} {
			if got, want := KeyPartition([]byte(c.key), n), (c.hash&0x7fffffff)%n; got != want {
				t.Errorf("KeyPartition(%q, %d) = %d, want %d", c.key, n, got, want)
			}
		}
	}
}

func TestBrokerAnswersAreWellFormed(t *testing.T) {
	name := regexp.MustCompile(`^[A-Z_]+$`)
	codes := map[int16]bool{}
	for _, a := range BrokerAnswers() {
		if codes[a.Code] || a.Code <= 0 {
			t.Errorf("%s: code %d is not positive or is listed twice", a.Name, a.Code)
		}
		codes[a.Code] = true
		if !name.MatchString(a.Name) || a.Why == "" {
			t.Errorf("code %d: name %q and a reason are needed", a.Code, a.Name)
		}
		if a.Once != history.Fail && a.Once != history.Info {
			t.Errorf("%s: Once is %q, not fail or info", a.Name, a.Once)
		}
		if a.OnceAcksAll != "" && a.OnceAcksAll != history.Info {
			t.Errorf("%s: acks=all can only make an outcome less certain, not %q", a.Name, a.OnceAcksAll)
		}
		if a.Deterministic && a.Once != history.Fail {
			t.Errorf("%s: a deterministic refusal appends nothing, so it is a fail", a.Name)
		}
	}
}

// TestImportsNoKafkaLibrary holds the seam to its purpose: a client in another package or
// another language reads it without linking a Kafka library.
func TestImportsNoKafkaLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	out, err := exec.Command("go", "list", "-deps", ".", "../internal/kit").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "sarama") || strings.Contains(dep, "franz-go") || strings.Contains(dep, "kafka-go") ||
			strings.HasPrefix(dep, "github.com/verity-kafka/verity/workloads") && dep != "github.com/verity-kafka/verity/workloads/kclient" &&
				dep != "github.com/verity-kafka/verity/workloads/internal/kit" {
			t.Errorf("kclient or kit depends on %s", dep)
		}
	}
}

func TestClientValues(t *testing.T) {
	if got := Counts(map[string][]int32{"a": {0, 1, 2}, "b": {0}}); got["a"] != 3 || got["b"] != 1 || len(got) != 2 {
		t.Errorf("Counts: %v", got)
	}
	if AbortNote("") != "" || AbortNote("kafka server: X") != "; abort: kafka server: X" {
		t.Error("AbortNote adds the abort's error, and nothing for an abort that succeeded")
	}
	describe := func(err error) (string, bool) {
		if err.Error() == "known" {
			return "kafka server: KNOWN", true
		}
		return "", false
	}
	if Text(nil, describe) != "" || Text(errors.New("known"), describe) != "kafka server: KNOWN" || Text(errors.New("other"), describe) != "other" {
		t.Error("Text: the client's text for what it knows, the message otherwise, nothing for nil")
	}
	perm := fmt.Errorf("opening: %w", &PermanentError{Err: errors.New("bad config")})
	if !IsPermanent(perm) || IsPermanent(errors.New("coordinator moved")) || perm.Error() != "opening: bad config" {
		t.Errorf("IsPermanent through wrapping: %v", perm)
	}
}
