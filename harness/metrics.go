package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"github.com/verity-kafka/verity/metrics"
)

// A node's JMX metrics are read over HTTP from the Jolokia agent the node runs (when the Kafka
// image carries one: Images.JMXAgent). The sampler reaches every node through its own proxy in
// proxy-client, "metrics-n<j>", which no link and no fault touches: it stands for a monitoring
// network apart from the one the faults cut, and its host port stays the same when the node
// restarts. A paused or stopped node does not answer; that is what a monitoring system would see.

// ErrNoMetrics is returned by ReadMetrics when the cluster's nodes run without a JMX agent.
var ErrNoMetrics = errors.New("broker metrics unavailable")

// jmxAgentOpts is the JVM option that starts the agent at path on every interface of the node.
func jmxAgentOpts(path string) string {
	return fmt.Sprintf("-javaagent:%s=host=0.0.0.0,port=%d,discoveryEnabled=false", path, jmxAgentPort)
}

// metricsProxies are proxy-client's proxies to the nodes' agents, and their host addresses.
func (c *Cluster) metricsProxies(ctx context.Context) ([]toxiproxy.Proxy, error) {
	if c.images.JMXAgent == "" {
		return nil, nil
	}
	c.metricsAddrs = map[int]string{}
	c.metricsHTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	var ps []toxiproxy.Proxy
	for _, m := range c.members {
		p, err := c.clientProxy.container.MappedPort(ctx, fmt.Sprintf("%d/tcp", metricsProxyBase+m.ID))
		if err != nil {
			return nil, fmt.Errorf("reading the host port of node %d's metrics: %w", m.ID, err)
		}
		c.metricsAddrs[m.ID] = net.JoinHostPort(c.eng.host, strconv.Itoa(int(p.Num())))
		ps = append(ps, toxiproxy.Proxy{
			Name: fmt.Sprintf("metrics-n%d", m.ID), Enabled: true,
			Listen:   fmt.Sprintf("0.0.0.0:%d", metricsProxyBase+m.ID),
			Upstream: fmt.Sprintf("node-%d:%d", m.ID, jmxAgentPort),
		})
	}
	return ps, nil
}

// MetricsSource says how ReadMetrics reads the nodes' metrics, or why it cannot (ErrNoMetrics).
func (c *Cluster) MetricsSource() (string, error) {
	if err := c.noMetrics(); err != nil {
		return "", err
	}
	return "Jolokia JVM agent " + c.images.JMXAgent + " in " + c.images.Kafka, nil
}

// noMetrics says why the nodes' metrics cannot be read, or nil: the check ReadMetrics makes on
// every sample, which formats nothing when they can.
func (c *Cluster) noMetrics() error {
	if c.images.JMXAgent != "" {
		return nil
	}
	_, standIn := KafkaImages(c.spec.KafkaVersion)
	return fmt.Errorf("%w: the Kafka image %s carries no JMX agent (no %s label); Verity's stand-in (make images, with VERITY_KAFKA_IMAGE=%s) does",
		ErrNoMetrics, c.images.Kafka, JMXAgentLabel, standIn)
}

// jolokiaRead is one read request of a Jolokia bulk request.
type jolokiaRead struct {
	Type      string `json:"type"`
	MBean     string `json:"mbean"`
	Attribute string `json:"attribute"`
}

// jolokiaAnswer is one answer of a bulk request: a value, or a status and an error.
type jolokiaAnswer struct {
	Status int             `json:"status"`
	Value  json.RawMessage `json:"value"`
	Error  string          `json:"error"`
}

// ReadMetrics asks node id for every metric of metrics.All in one request and returns the ones
// it has (a controller has no ReplicaManager; a broker that is not the active controller has
// no OfflinePartitionsCount). Bound it with ctx: a paused node answers nothing.
func (c *Cluster) ReadMetrics(ctx context.Context, id int) (map[metrics.Name]float64, error) {
	if err := c.noMetrics(); err != nil {
		return nil, err
	}
	addr, ok := c.metricsAddrs[id]
	if !ok {
		return nil, fmt.Errorf("reading the metrics of node %d: no such node", id)
	}
	all := metrics.All()
	reqs := make([]jolokiaRead, len(all))
	for i, m := range all {
		reqs[i] = jolokiaRead{Type: "read", MBean: m.MBean, Attribute: m.Attribute}
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of node %d: %w", id, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/jolokia/", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of node %d: %w", id, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.metricsHTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of node %d: %w", id, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of node %d: %w", id, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the metrics of node %d: HTTP %s", id, resp.Status)
	}
	var answers []jolokiaAnswer
	if err := json.Unmarshal(raw, &answers); err != nil || len(answers) != len(all) {
		return nil, fmt.Errorf("reading the metrics of node %d: the agent answered %d of %d reads (%v)", id, len(answers), len(all), err)
	}
	out := map[metrics.Name]float64{}
	for i, a := range answers {
		if a.Status != http.StatusOK {
			continue // the node has no such MBean
		}
		var v float64
		if err := json.Unmarshal(a.Value, &v); err != nil {
			return nil, fmt.Errorf("reading the metrics of node %d: %s is not a number: %s", id, all[i].Name, a.Value)
		}
		out[all[i].Name] = v
	}
	return out, nil
}
