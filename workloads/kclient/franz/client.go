package franz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient"
)

// Client is twmb/franz-go as a kclient.Client.
type Client struct {
	// base are the options of a client for the cluster (Base, or the caller's) for a client
	// id; the roles' settings go on top.
	base func(clientID string) []kgo.Opt
	// txnCap caps the transaction protocol ("": the best the cluster supports).
	txnCap kafkaconf.TxnProtocol
}

var _ kclient.Client = (*Client)(nil)

// New is franz-go with each instance's options from base, speaking at most the transaction
// protocol txnCap.
func New(base func(clientID string) []kgo.Opt, txnCap kafkaconf.TxnProtocol) *Client {
	return &Client{base: base, txnCap: txnCap}
}

// Base are a franz-go client's options for the harness's clusters, as harness.SaramaConfig is
// sarama's: the seed brokers, an id, and timeouts short enough for fault tests (a dial that does
// not answer in 5 s is a cut link) but above the broker's ack timeout, so that an acks=all
// produce waits for REQUEST_TIMED_OUT rather than dropping the connection as it arrives.
func Base(brokers []string, clientID string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID(clientID),
		kgo.DialTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
		kgo.RetryBackoffFn(func(tries int) time.Duration { return min(time.Duration(tries)*100*time.Millisecond, time.Second) }),
	}
}

// Opts are the base options for clientID.
func (c *Client) Opts(clientID string) []kgo.Opt { return c.base(clientID) }

func (c *Client) Name() kafkaconf.ClientName { return kafkaconf.FranzGo }

// Partitions asks with a franz-go client of its own.
func (c *Client) Partitions(ctx context.Context, clientID string, topics []string) (map[string][]int32, error) {
	cl, err := kgo.NewClient(c.base(clientID)...)
	if err != nil {
		return nil, fmt.Errorf("creating a franz-go client: %w", err)
	}
	defer cl.Close()
	return partitions(ctx, cl, topics)
}

// TxnProtocol: KIP-890's (v2) when the cluster has finalised transaction.version 2 and the cap
// allows it, else the one before (franz-go opts in on the same condition).
func (c *Client) TxnProtocol(ctx context.Context) (kafkaconf.TxnProtocol, error) {
	if c.txnCap == kafkaconf.TxnProtocolV1 {
		return kafkaconf.TxnProtocolV1, nil
	}
	cl, err := kgo.NewClient(c.base("verity-features-p0")...)
	if err != nil {
		return "", fmt.Errorf("asking the cluster's transaction.version: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "verity", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("asking the cluster's transaction.version: %w", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel >= 2 {
			return kafkaconf.TxnProtocolV2, nil
		}
	}
	return kafkaconf.TxnProtocolV1, nil
}

// txnCapOpts are the options that keep a client to transaction protocol v1 when the run caps it
// so: EndTxn at v4 (v5 is KIP-890's), so that franz-go does not opt in.
func (c *Client) txnCapOpts() []kgo.Opt {
	if c.txnCap != kafkaconf.TxnProtocolV1 {
		return nil
	}
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	return []kgo.Opt{kgo.MaxVersions(v)}
}

// partitions asks the cluster, through cl, for the partitions of each topic, in order. A broker
// that has not yet learned of a topic created a moment ago says it does not exist, so retriable
// answers are asked again until ctx ends or a minute passes; an error Kafka does not retry (an
// invalid topic name, an authorization failure) ends the wait at once.
func partitions(ctx context.Context, cl *kgo.Client, topics []string) (map[string][]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	var parts map[string][]int32
	var fatal error
	err := kit.WaitUntil(ctx, time.Now().Add(time.Minute), 250*time.Millisecond, func() (bool, error) {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false, err
		}
		parts = map[string][]int32{}
		for _, t := range resp.Topics {
			if t.Topic == nil {
				continue
			}
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				if !kerr.IsRetriable(err) {
					fatal = fmt.Errorf("topic %s: %w", *t.Topic, err)
					return true, nil
				}
				return false, fmt.Errorf("topic %s: %w", *t.Topic, err)
			}
			ps := make([]int32, 0, len(t.Partitions))
			for _, p := range t.Partitions {
				ps = append(ps, p.Partition)
			}
			slices.Sort(ps)
			parts[*t.Topic] = ps
		}
		for _, t := range topics {
			if len(parts[t]) == 0 {
				return false, fmt.Errorf("topic %s: no partitions known yet", t)
			}
		}
		return true, nil
	})
	switch {
	case fatal != nil:
		return nil, fmt.Errorf("partitions of %v: %w", topics, fatal)
	case err != nil:
		return nil, fmt.Errorf("partitions of %v: %w", topics, err)
	}
	return parts, nil
}

// text is the history's error text for err ("" for nil).
func text(err error) string { return kclient.Text(err, ErrorText) }

// ErrorName is Kafka's protocol name and code of a *kerr.Error err is or wraps.
func (c *Client) ErrorName(err error) (string, int16, bool) {
	ke, ok := errors.AsType[*kerr.Error](err)
	if !ok {
		return "", 0, false
	}
	return ke.Message, ke.Code, true
}

// ErrorText is the history's error text for err.
func (c *Client) ErrorText(err error) string { return text(err) }
