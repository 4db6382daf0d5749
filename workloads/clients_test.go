package workloads

import (
	"reflect"
	"testing"

	"github.com/verity-kafka/verity/kafkaconf"
)

// Every client kafkaconf lists has an adapter for every workload role, and no adapter stands
// for a client kafkaconf does not list: a run cannot pick a client and then find a role missing.
func TestEveryClientHasEveryRole(t *testing.T) {
	listed := map[kafkaconf.ClientName]bool{}
	for _, c := range kafkaconf.Clients() {
		listed[c.Name] = true
		a, err := adaptersOf(c.Name)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		v := reflect.ValueOf(a)
		for i := range v.NumField() {
			if v.Field(i).IsNil() {
				t.Errorf("%s has no %s adapter", c.Name, v.Type().Field(i).Name)
			}
		}
	}
	for name := range clientAdapters() {
		if !listed[name] {
			t.Errorf("adapters for %s, which kafkaconf.Clients does not list", name)
		}
	}
	for name, build := range clients() {
		if !listed[name] {
			t.Errorf("a client %s, which kafkaconf.Clients does not list", name)
		}
		if got := build(Env{Brokers: []string{"b:9092"}}).Name(); got != name {
			t.Errorf("the row for %s builds client %s", name, got)
		}
	}
	for name := range listed {
		if _, ok := clients()[name]; !ok {
			t.Errorf("kafkaconf.Clients lists %s, which has no row in clients()", name)
		}
	}
	if _, err := adaptersOf("librdkafka"); err == nil {
		t.Error("adapters for an unknown client")
	}
}
