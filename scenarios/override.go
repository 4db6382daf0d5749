package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Overrides are the CLI's flags that force settings onto a scenario (nil: not given). Each
// applies to every place the setting occurs: --acks to the client and every producer group,
// --min-isr, --rf and --unclean to every topic.
type Overrides struct {
	Acks        *string // --acks 0|1|all
	Idempotence *bool   // --idempotence
	MinISR      *int    // --min-isr
	RF          *int    // --rf
	Unclean     *bool   // --unclean
	Isolation   *string // --isolation read_committed|read_uncommitted
	Nodes       *int    // --nodes
	Seed        *int64  // --seed
	Duration    *time.Duration
}

// Strings lists the given overrides as flags, in a fixed order.
func (o Overrides) Strings() []string {
	var out []string
	add := func(flag, v string) { out = append(out, "--"+flag+"="+v) }
	if o.Acks != nil {
		add("acks", *o.Acks)
	}
	if o.Idempotence != nil {
		add("idempotence", strconv.FormatBool(*o.Idempotence))
	}
	if o.MinISR != nil {
		add("min-isr", strconv.Itoa(*o.MinISR))
	}
	if o.RF != nil {
		add("rf", strconv.Itoa(*o.RF))
	}
	if o.Unclean != nil {
		add("unclean", strconv.FormatBool(*o.Unclean))
	}
	if o.Isolation != nil {
		add("isolation", *o.Isolation)
	}
	if o.Nodes != nil {
		add("nodes", strconv.Itoa(*o.Nodes))
	}
	if o.Seed != nil {
		add("seed", strconv.FormatInt(*o.Seed, 10))
	}
	if o.Duration != nil {
		add("duration", Duration(*o.Duration).String())
	}
	return out
}

// check validates the flag values on their own, naming the flag.
func (o Overrides) check() Errors {
	var es Errors
	bad := func(flag, format string, args ...any) {
		es = append(es, &FieldError{Path: "--" + flag, Msg: fmt.Sprintf(format, args...)})
	}
	if o.Acks != nil && *o.Acks != "0" && *o.Acks != "1" && *o.Acks != "all" && *o.Acks != "-1" {
		bad("acks", "%q: want 0, 1 or all", *o.Acks)
	}
	if o.MinISR != nil && *o.MinISR < 1 {
		bad("min-isr", "%d: want at least 1", *o.MinISR)
	}
	if o.RF != nil && *o.RF < 1 {
		bad("rf", "%d: want at least 1", *o.RF)
	}
	if o.Isolation != nil && *o.Isolation != ReadCommitted && *o.Isolation != ReadUncommitted {
		bad("isolation", "%q: want %s or %s", *o.Isolation, ReadCommitted, ReadUncommitted)
	}
	if o.Nodes != nil && (*o.Nodes < 1 || *o.Nodes > 50) {
		bad("nodes", "%d: want 1 to 50 brokers", *o.Nodes)
	}
	if o.Duration != nil && (*o.Duration <= 0 || *o.Duration > 24*time.Hour) {
		bad("duration", "%s: want a positive duration up to 24h, such as 60s", *o.Duration)
	}
	return es
}

// Override returns s with o's settings forced on, validated like a parsed scenario. A bad flag
// value is an error naming the flag; a combination the scenario cannot run (--rf 1 on a topic
// with min ISR 2) is an error naming the flags and the field they broke.
//
// Forcing acks to 0 or 1 without --idempotence puts idempotence back to Kafka's default (off
// with such acks), as verify/guarantee.Overrides does, rather than keep an explicit
// idempotence that Kafka would refuse to start with.
func (s Scenario) Override(o Overrides) (Scenario, error) {
	if es := o.check(); len(es) > 0 {
		return Scenario{}, es
	}
	s = s.WithDefaults()
	if o.Acks != nil {
		acks := *o.Acks
		if acks == "-1" {
			acks = "all"
		}
		s.Client.Acks = acks
		for i := range s.Workload.Producers {
			s.Workload.Producers[i].Acks = ""
		}
		if acks != "all" && o.Idempotence == nil {
			s.Client.Idempotence = nil
			for i := range s.Workload.Producers {
				s.Workload.Producers[i].Idempotence = nil
			}
		}
	}
	if o.Idempotence != nil {
		v := *o.Idempotence
		s.Client.Idempotence = &v
		for i := range s.Workload.Producers {
			s.Workload.Producers[i].Idempotence = nil
		}
	}
	for i := range s.Topics {
		t := &s.Topics[i]
		if o.RF != nil {
			t.ReplicationFactor = *o.RF
		}
		if o.MinISR != nil {
			t.MinInsyncReplicas = *o.MinISR
		}
		if o.Unclean != nil {
			t.UncleanLeaderElection = *o.Unclean
		}
	}
	if o.Isolation != nil {
		s.Client.Isolation = *o.Isolation
	}
	if o.Nodes != nil {
		s.Topology.Nodes = *o.Nodes
	}
	if o.Seed != nil {
		s.Seed = *o.Seed
	}
	if o.Duration != nil {
		s.Duration = Duration(*o.Duration)
	}
	if err := s.Validate(); err != nil {
		var es Errors
		if errors.As(err, &es) {
			return Scenario{}, &OverrideError{Scenario: s.Name, Flags: o.Strings(), Errs: es}
		}
		return Scenario{}, err
	}
	return s, nil
}

// OverrideError is a scenario that the given flags made invalid.
type OverrideError struct {
	Scenario string
	Flags    []string
	Errs     Errors
}

func (e *OverrideError) Error() string {
	return fmt.Sprintf("scenario %s with %s: %v", e.Scenario, strings.Join(e.Flags, " "), e.Errs)
}

// Unwrap gives the Errors, for errors.As.
func (e *OverrideError) Unwrap() error { return e.Errs }
