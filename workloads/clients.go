package workloads

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
	kfranz "github.com/verity-kafka/verity/workloads/kclient/franz"
	"github.com/verity-kafka/verity/workloads/kclient/remote"
	ksarama "github.com/verity-kafka/verity/workloads/kclient/sarama"
)

// clients builds each client Verity drives (kafkaconf.Clients) for a run's Env: one row per
// client, so that a client cannot be listed without one (TestEveryClientHasEveryRole).
func clients() map[kafkaconf.ClientName]func(Env) kclient.Client {
	return map[kafkaconf.ClientName]func(Env) kclient.Client{
		kafkaconf.Sarama:  func(e Env) kclient.Client { return ksarama.New(e.Brokers, e.Sarama) },
		kafkaconf.FranzGo: func(e Env) kclient.Client { return kfranz.New(e.Franz, e.TxnProtocol) },
		kafkaconf.Java:    func(e Env) kclient.Client { return e.Program },
	}
}

// client is the run's client: the program the run started, if any.
func (e Env) client() (kclient.Client, error) {
	if e.Program != nil {
		return e.Program, nil
	}
	build, ok := clients()[e.Client]
	if !ok {
		return nil, fmt.Errorf("no workloads for client %q", e.Client)
	}
	cl := build(e)
	if cl == nil {
		return nil, fmt.Errorf("client %s is a program, and none is running: StartProgram starts it (Run does)", e.Client)
	}
	return cl, nil
}

// txnProtocol is the transaction protocol the run's transactional clients will speak.
func txnProtocol(ctx context.Context, env Env) (kafkaconf.TxnProtocol, error) {
	cl, err := env.client()
	if err != nil {
		return "", err
	}
	return cl.TxnProtocol(ctx)
}

// topicPartitions asks the cluster, with the run's client, how many partitions each topic has.
func topicPartitions(ctx context.Context, env Env, id string, topics []string) (map[string]int32, error) {
	cl, err := env.client()
	if err != nil {
		return nil, err
	}
	parts, err := cl.Partitions(ctx, id, topics)
	if err != nil {
		return nil, err
	}
	return kclient.Counts(parts), nil
}

// ServeClient serves the Go client name over the remote client protocol, reading requests from r
// and writing to w until r ends (verity client serve): the protocol's reference program, and
// the Go clients' way to run at a version of their own.
func ServeClient(ctx context.Context, name kafkaconf.ClientName, r io.Reader, w io.Writer, log *slog.Logger) error {
	c, ok := kafkaconf.LookupClient(name)
	if !ok {
		_, err := kafkaconf.ParseClient(string(name))
		return err
	}
	if _, ok := clients()[name]; !ok || c.IsProgram() {
		return fmt.Errorf("client %s has no Go code to serve", name)
	}
	info := remote.ClientInfo{Name: string(name), Library: c.Module, Version: cmp.Or(c.Version(), "unknown")}
	return remote.Serve(ctx, r, w, info, func(h remote.HelloArgs) (kclient.Client, error) {
		env, err := Env{Brokers: h.Brokers, Client: name, TxnProtocol: h.TxnProtocolCap, Log: log}.settled()
		if err != nil {
			return nil, err
		}
		return env.client()
	}, log)
}
