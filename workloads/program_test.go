package workloads

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
	"github.com/verity-kafka/verity/workloads/kclient/remote"
)

func javaCommand(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the Java client program with Maven")
	}
	java, _ := kafkaconf.LookupClient(kafkaconf.Java)
	cmd, err := ProgramCommand(withTimeout(t, 10*time.Minute), java, "", nil)
	if err != nil {
		t.Fatalf("building the Java client program: %v", err)
	}
	return cmd
}

// What a broker's answer about a batch says is Kafka's fact, written once in
// kclient.BrokerAnswers: the Java program's table says the same of every code.
func TestJavaTableIsKafkasFacts(t *testing.T) {
	cmd := javaCommand(t)
	out, err := exec.Command(cmd[0], append(cmd[1:], "--table")...).Output()
	if err != nil {
		t.Fatalf("%v --table: %v", cmd, err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("a row of 5 fields: %q", line)
		}
		got[f[0]] = strings.Join(f[1:], " ")
	}
	want := map[string]string{}
	for _, a := range kclient.BrokerAnswers() {
		acksAll := ""
		if a.OnceAcksAll != "" {
			acksAll = string(a.OnceAcksAll)
		}
		want[fmt.Sprint(a.Code)] = strings.Join([]string{a.Name, string(a.Once), acksAll, fmt.Sprint(a.Deterministic)}, " ")
	}
	for code, w := range want {
		if got[code] != w {
			t.Errorf("code %s: Java's table says %q, kclient.BrokerAnswers %q", code, got[code], w)
		}
	}
	for code, g := range got {
		if _, ok := want[code]; !ok {
			t.Errorf("code %s (%s) is in Java's table only", code, g)
		}
	}
}

// testJavaProtocol: the Java program keeps the protocol's rules (verity client check, no
// cluster needed; it runs beside the cluster tests, since brokers that never answer make it wait).
func testJavaProtocol(t *testing.T) {
	cmd := javaCommand(t)
	report, ok := remote.Report(remote.Check(t.Context(), cmd, nil))
	if !ok {
		t.Fatalf("the Java program breaks the protocol:\n%s", report)
	}
	t.Logf("\n%s", report)
}
