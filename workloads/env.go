package workloads

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
)

// Recorder is where workloads record their ops: a *history.Writer, or anything with its
// methods (a test's fake, a recorder that also counts). Workloads never read it back.
type Recorder interface {
	Invoke(p history.Process, f string, v history.Payload) (history.Op, error)
	Complete(inv history.Op, t history.Type, v history.Payload, errText string) (history.Op, error)
	CompleteAsync(inv history.Op, t history.Type, v history.Payload, errText string) (history.Op, error)
	// Since is the time since the history's start, the time base of its ops: what is
	// recorded beside the history (broker metrics) is stamped with it.
	Since() time.Duration
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
	// Client is the Kafka client every workload of the run drives (kafkaconf.Clients); default
	// kafkaconf.DefaultClient. TxnProtocol caps the transaction protocol it may speak ("":
	// the best the client and the cluster both support).
	Client      kafkaconf.ClientName
	TxnProtocol kafkaconf.TxnProtocol
	// GroupProtocol is the consumer group protocol the run's group members speak ("": the
	// client's default).
	GroupProtocol kafkaconf.GroupProtocol
	// Sarama returns a base sarama configuration for a client id; default
	// harness.SaramaConfig (the cluster's Kafka version, timeouts for fault tests). Workloads
	// set the producer, consumer and transaction fields on top.
	Sarama func(clientID string) *sarama.Config
	// Franz returns the base options of a franz-go client for a client id (seed brokers,
	// timeouts); default kfranz.Base. Workloads add the producer, consumer and transaction
	// options.
	Franz func(clientID string) []kgo.Opt
	// Program is the running program of a client that is one (kafkaconf.Client.IsProgram: java),
	// which StartProgram starts; every role of the run speaks to it.
	Program kclient.Client
	// Log receives progress and warnings; default discards.
	Log *slog.Logger
	// Postgres and Ledger are the addresses of the side-effect services sinks write to (a
	// pgx DSN, an http:// URL); "" when the cluster runs none.
	Postgres, Ledger string
	// RunTag tells this run's entries in a shared store (the ledger) from other runs'; Run
	// sets it to the history's start time.
	RunTag string
}

func (e Env) withDefaults() (Env, error) {
	if e.Recorder == nil {
		return e, fmt.Errorf("workloads: Env.Recorder is required")
	}
	return e.settled()
}

// settled is e with its defaults, as far as they need no recorder.
func (e Env) settled() (Env, error) {
	if len(e.Brokers) == 0 {
		return e, fmt.Errorf("workloads: Env.Brokers is empty")
	}
	if e.Client == "" {
		e.Client = kafkaconf.DefaultClient
	}
	if _, err := kafkaconf.ParseClient(string(e.Client)); err != nil {
		return e, fmt.Errorf("workloads: %w", err)
	}
	if e.Sarama == nil {
		e.Sarama = harness.SaramaConfig
	}
	if e.Franz == nil {
		brokers := e.Brokers
		e.Franz = func(clientID string) []kgo.Opt { return kfranz.Base(brokers, clientID) }
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

// kafka is the run's client as kafkaconf describes it: its limits and capabilities.
func (e Env) kafka() kafkaconf.Client {
	c, _ := kafkaconf.LookupClient(cmp.Or(e.Client, kafkaconf.DefaultClient))
	return c
}

// WireLevel is the slog level of the clients' wire-level lines (franz-go's debug lines), below
// slog's debug: verity run --debug shows them.
const WireLevel = kclient.WireLevel

// raw marshals a payload for ops whose value history.Payload keeps as raw JSON (assign,
// subscribe, crash). The values are maps and slices of plain types: marshalling cannot fail.
func raw(v any) history.Payload {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`null`)
	}
	return history.Payload{Raw: b}
}
