package scenarios_test

import (
	"fmt"

	"github.com/verity-kafka/verity/scenarios"
)

// A scenario file names only what differs from the defaults; mistakes come back with the field's
// path, its line and what it accepts.
func ExampleParse() {
	s, err := scenarios.Parse([]byte(`
name: acks1-kill
client: {acks: 1}
faults:
  timeline:
    - {at: 20s, fault: kill, target: {role: leader-of}, duration: 15s}
`))
	fmt.Println(s.Topics[0].Name, s.Topics[0].ReplicationFactor, s.Topics[0].MinInsyncReplicas, *s.Client.Acks, s.Duration, err)

	_, err = scenarios.Parse([]byte(`
name: typo
clinet: {acks: 2}
topics: [{name: t, replication_factor: 3, min_insync_replicas: 4}]
`))
	fmt.Println(err)
	// Output:
	// verity 3 2 1 1m <nil>
	// clinet: unknown field; the scenario has broker, client, description, duration, expect, faults, kafka, name, regression, requires, seed, source, tags, topics, topology, workload (did you mean client?) (line 3)
}

func ExampleResolved_Override() {
	s, _ := scenarios.Builtin("default")
	r, _ := s.Resolve()
	rf, _ := scenarios.LookupKnob("rf")
	_, err := r.Override([]scenarios.Setting{{Knob: rf, Value: "1"}})
	fmt.Println(err)
	// Output:
	// scenario default with --rf=1: topics[0].min_insync_replicas: 2 is more than replication_factor 1
}
