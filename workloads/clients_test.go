package workloads

import (
	"testing"

	"github.com/verity-kafka/verity/kafkaconf"
)

// Every client kafkaconf lists has a row that builds it, and no row stands for a client
// kafkaconf does not list: a run cannot pick a client and then find it missing. That each
// client has every role is the compiler's to check (kclient.Client).
func TestEveryClientHasEveryRole(t *testing.T) {
	listed := map[kafkaconf.ClientName]bool{}
	for _, c := range kafkaconf.Clients() {
		listed[c.Name] = true
		if _, err := (Env{Brokers: []string{"b:9092"}, Client: c.Name}).client(); err != nil && !c.IsProgram() {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	for name, build := range clients() {
		c, ok := kafkaconf.LookupClient(name)
		if !ok {
			t.Errorf("a client %s, which kafkaconf.Clients does not list", name)
			continue
		}
		if c.IsProgram() {
			// A program's row is the program the run started.
			if build(Env{Brokers: []string{"b:9092"}}) != nil {
				t.Errorf("the row for %s builds a client with no program running", name)
			}
			continue
		}
		if got := build(Env{Brokers: []string{"b:9092"}}).Name(); got != name {
			t.Errorf("the row for %s builds client %s", name, got)
		}
	}
	if _, err := (Env{Brokers: []string{"b:9092"}, Client: "librdkafka"}).client(); err == nil {
		t.Error("a client for an unknown name")
	}
}
