package sarama

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Client is IBM/sarama as a kclient.Client.
type Client struct {
	brokers []string
	// base is a sarama configuration for the cluster (its Kafka version, timeouts for fault
	// tests) for a client id; the roles' settings go on top.
	base func(clientID string) *sarama.Config
}

var _ kclient.Client = (*Client)(nil)

// New is sarama for the cluster at brokers, each instance configured from base.
func New(brokers []string, base func(clientID string) *sarama.Config) *Client {
	return &Client{brokers: brokers, base: base}
}

func (c *Client) Name() kafkaconf.ClientName { return kafkaconf.Sarama }

// Partitions asks with a sarama client of its own; sarama retries metadata until a topic
// created a moment ago is known (Metadata.Retry).
func (c *Client) Partitions(_ context.Context, clientID string, topics []string) (map[string][]int32, error) {
	client, err := sarama.NewClient(c.brokers, c.base(clientID))
	if err != nil {
		return nil, fmt.Errorf("connecting to %v: %w", c.brokers, err)
	}
	defer client.Close()
	return partitions(client, topics)
}

// partitions asks the cluster, through client, for each topic's partitions.
func partitions(client sarama.Client, topics []string) (map[string][]int32, error) {
	parts := map[string][]int32{}
	for _, t := range topics {
		ps, err := client.Partitions(t)
		if err != nil {
			return nil, fmt.Errorf("partitions of topic %s: %w", t, err)
		}
		parts[t] = ps
	}
	return parts, nil
}

// TxnProtocol: sarama sends EndTxn v3 whatever the cluster supports.
func (c *Client) TxnProtocol(context.Context) (kafkaconf.TxnProtocol, error) {
	return kafkaconf.TxnProtocolV1, nil
}

// requiredAcks maps Kafka's acks onto sarama's.
func requiredAcks(a kafkaconf.Acks) sarama.RequiredAcks {
	switch a {
	case kafkaconf.AcksNone:
		return sarama.NoResponse
	case kafkaconf.AcksLeader:
		return sarama.WaitForLocal
	}
	return sarama.WaitForAll
}

// EnsureReadTimeout sets the client's socket read timeout 5 s above the leader's ack timeout
// (Producer.Timeout): below it, when the ISR is slow, sarama would give up on the connection at
// the moment the leader would have answered REQUEST_TIMED_OUT, failing every request in flight
// on it; far above it, a request whose answer is lost would hang longer than the request
// timeout the scenario asked for (Kafka's request.timeout.ms bounds the client's wait).
func EnsureReadTimeout(cfg *sarama.Config) {
	cfg.Net.ReadTimeout = cfg.Producer.Timeout + 5*time.Second
}

// text is the history's error text for err ("" for nil).
func text(err error) string { return kclient.Text(err, ErrorText) }

// ErrorName is Kafka's protocol name and code of a sarama.KError err is or wraps.
func (c *Client) ErrorName(err error) (string, int16, bool) {
	var k sarama.KError
	if !errors.As(err, &k) {
		return "", 0, false
	}
	return ErrorName(k), int16(k), true
}

// ErrorText is the history's error text for err.
func (c *Client) ErrorText(err error) string { return text(err) }
