package kclient

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// Client is one Kafka client as the roles drive it: every instance a role opens comes from
// it. A client is built for a run (its cluster, its transaction-protocol cap) by the folder that
// implements it; the roles never see the library underneath.
type Client interface {
	// Name is the client's name in kafkaconf.Clients.
	Name() kafkaconf.ClientName
	// Partitions asks the cluster for each topic's partitions, in order, waiting for a topic
	// created a moment ago to be known.
	Partitions(ctx context.Context, clientID string, topics []string) (map[string][]int32, error)
	// TxnProtocol is the transaction protocol the client will speak with the cluster: the
	// best that the client, the run's cap and the cluster support.
	TxnProtocol(ctx context.Context) (kafkaconf.TxnProtocol, error)
	// OpenProducer opens a plain producer and asks for the partitions of s.Topics. warnings
	// say what of s the client cannot do.
	OpenProducer(ctx context.Context, s ProducerSpec) (_ Producer, parts map[string][]int32, warnings []string, _ error)
	// OpenConsumer opens a consumer instance.
	OpenConsumer(ctx context.Context, s ConsumerSpec) (Consumer, error)
	// OpenMember opens a read-process-write member, initialising its transactional.id as
	// OpenTxn does.
	OpenMember(ctx context.Context, s MemberSpec) (Member, error)
	// OpenTxn opens a transactional producer for s.TxnID and initialises the id, which fences
	// every earlier instance of it. It tries once; an error that no retry changes (a
	// configuration the client refuses) is a *PermanentError.
	OpenTxn(ctx context.Context, s TxnSpec) (Txn, error)
}

// Counts is parts as partition counts, for the roles that pick partitions by number.
func Counts(parts map[string][]int32) map[string]int32 {
	counts := make(map[string]int32, len(parts))
	for t, ps := range parts {
		counts[t] = int32(len(ps))
	}
	return counts
}

// TxnSpec is what a transactional producer instance is opened with: settings resolved by the
// role, so that every client applies the same ones.
type TxnSpec struct {
	ClientID, TxnID string
	// Settings are the resolved producer settings (acks=all, idempotence, retries).
	Settings kafkaconf.Producer
	// Timeout is transaction.timeout.ms; it also bounds ending a transaction.
	Timeout time.Duration
	// RequestTimeout is the leader's wait for the ISR (the produce request's timeout).
	RequestTimeout time.Duration
	Log            *slog.Logger
}

// Txn is one instance of a transactional producer. Only the goroutine that owns it calls its
// methods.
type Txn interface {
	// Begin starts a transaction.
	Begin() error
	// Send writes recs in the current transaction and waits until each is acknowledged or
	// failed, or until deadline. It fills in the partitions and offsets of acknowledged
	// records and returns the first error (a record still unanswered at the deadline is one).
	Send(recs []history.Record, deadline time.Time) error
	// Commit ends the current transaction with a commit and says what is known of its
	// outcome by the rules at TxnAborted: ok, fail or info, with the error text.
	Commit() (history.Type, string)
	// Abort ends the current transaction with an abort.
	Abort() error
	// Ready says whether the instance can begin another transaction, and if not, why: it
	// must then be replaced by a new one.
	Ready() (ok bool, why string)
	// Close shuts the instance down without ending its transaction: an open one is aborted
	// by the next instance's initialisation, or by the coordinator after the transaction
	// timeout. It waits a bounded time, then leaves the client to finish in the background.
	Close()
}

// AbortNote is what an abort's error text adds to a failed transaction's text: nothing when the
// abort succeeded.
func AbortNote(abortErrText string) string {
	if abortErrText == "" {
		return ""
	}
	return "; abort: " + abortErrText
}

// Text is the history's error text for err ("" for nil): describe's, when it knows the error
// (a client's text for its broker errors, with Kafka's protocol name), else err's message.
func Text(err error, describe func(error) (string, bool)) string {
	if err == nil {
		return ""
	}
	if t, ok := describe(err); ok {
		return t
	}
	return err.Error()
}

// Error is an error a client named: Kafka's protocol name and code when a broker answered with
// one, the client's own name for it otherwise. Text is the history's error text.
type Error struct {
	Name string
	Code *int16
	Text string
}

func (e *Error) Error() string { return e.Text }

// Describer is a client that can name its errors and write their history text: what a program
// serving the client over the remote protocol puts on the wire.
type Describer interface {
	// ErrorName is Kafka's protocol name and code of err, when a broker answered with it.
	ErrorName(err error) (name string, code int16, ok bool)
	// ErrorText is the history's error text for err.
	ErrorText(err error) string
}

// PermanentError is an open that no retry changes: the client refused its configuration.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent says whether err, or an error it wraps, is a *PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// WireLevel is the slog level of the clients' wire-level lines (franz-go's debug lines), below
// slog's debug: verity run --debug shows them.
const WireLevel = slog.LevelDebug - 4
