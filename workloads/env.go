package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
)

// Recorder is where workloads record their ops: a *history.Writer, or anything with its three
// methods (a test's fake, a recorder that also counts). Workloads never read it back.
type Recorder interface {
	Invoke(p history.Process, f string, v history.Payload) (history.Op, error)
	Complete(inv history.Op, t history.Type, v history.Payload, errText string) (history.Op, error)
	CompleteAsync(inv history.Op, t history.Type, v history.Payload, errText string) (history.Op, error)
}

// Env is what every workload of a run shares: where the cluster is, where ops go, the run's seed.
type Env struct {
	// Brokers are the bootstrap addresses (harness: Cluster.Bootstrap()).
	Brokers []string
	// Recorder receives the ops; required.
	Recorder Recorder
	// Seed is the run's seed: each process draws its choices from NewRand(Seed, process).
	Seed int64
	// Processes numbers client instances started during the run (a zombie's usurper). Nil
	// means numbers from 1000 up.
	Processes *Processes
	// Sarama returns a base sarama configuration for a client id; default
	// harness.SaramaConfig (the cluster's Kafka version, timeouts for fault tests). Workloads
	// set the producer, consumer and transaction fields on top.
	Sarama func(clientID string) *sarama.Config
	// Log receives progress and warnings; default discards.
	Log *slog.Logger
}

func (e Env) withDefaults() (Env, error) {
	if e.Recorder == nil {
		return e, fmt.Errorf("workloads: Env.Recorder is required")
	}
	if len(e.Brokers) == 0 {
		return e, fmt.Errorf("workloads: Env.Brokers is empty")
	}
	if e.Sarama == nil {
		e.Sarama = harness.SaramaConfig
	}
	if e.Log == nil {
		e.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.Processes == nil {
		e.Processes = NewProcesses(1000)
	}
	return e, nil
}

func clientID(p int, role string) string { return fmt.Sprintf("verity-%s-p%d", role, p) }

// raw marshals a payload for ops whose value history.Payload keeps as raw JSON (assign,
// subscribe, crash). The values are maps and slices of plain types: marshalling cannot fail.
func raw(v any) history.Payload {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`null`)
	}
	return history.Payload{Raw: b}
}

// waitUntil polls cond every interval until it holds, ctx ends or the deadline passes. It is
// how workloads wait for a condition they cannot be told about (a partition's LSO to reach its
// HW): never a bare sleep standing in for synchronisation.
func waitUntil(ctx context.Context, deadline time.Time, interval time.Duration, cond func() (bool, error)) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-t.C:
		}
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if !time.Now().Before(deadline) {
			if last != nil {
				return fmt.Errorf("deadline passed: %w", last)
			}
			return fmt.Errorf("deadline passed")
		}
		t.Reset(min(interval, max(time.Until(deadline), time.Millisecond)))
	}
}

// sleepCtx waits d or until ctx ends, whichever is first. It is used for pacing (a rate limit,
// a backoff before retrying a refused request), never as synchronisation.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
