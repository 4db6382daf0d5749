// Package metrics names the broker metrics Verity samples during a run (one list, All), keeps
// the samples (metrics.jsonl in a run folder; docs/metrics.md is the format) and checks them
// against what the run observed of the cluster: an alert that would not have fired while the
// condition it watches held is a finding (Check).
//
// It imports nothing of Verity's.
package metrics

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Name names a sampled metric in metrics.jsonl and in results.json.
type Name string

// The sampled metrics. Gauges are read as they are; counters are totals since the broker
// started (a restarted broker starts again from zero), a rate is their difference over time.
const (
	UnderReplicated   Name = "under_replicated_partitions"
	UnderMinISR       Name = "under_min_isr_partitions"
	OfflineReplicas   Name = "offline_replicas"
	ISRShrinks        Name = "isr_shrinks_total"
	ISRExpands        Name = "isr_expands_total"
	FailedISRUpdates  Name = "failed_isr_updates_total"
	MaxFetcherLag     Name = "replica_fetcher_max_lag_records"
	OfflinePartitions Name = "offline_partitions"
	ActiveController  Name = "active_controller"
)

// Kind says how a metric's values are read.
type Kind string

const (
	Gauge   Kind = "gauge"
	Counter Kind = "counter"
)

// Metric is one sampled metric: where JMX has it and what it means.
type Metric struct {
	Name      Name   `json:"name"`
	MBean     string `json:"mbean"`
	Attribute string `json:"attribute"`
	Kind      Kind   `json:"kind"`
	Unit      string `json:"unit"`
	About     string `json:"about"`
}

// All lists every sampled metric, in the order the report plots them. A new metric is one entry
// here. A node that does not have a metric's MBean (a controller has no ReplicaManager; only the
// active controller counts offline partitions) leaves it out of its sample.
func All() []Metric {
	return []Metric{
		{UnderMinISR, "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", "Value", Gauge, "partitions",
			"partitions this broker leads whose ISR is smaller than min.insync.replicas"},
		{UnderReplicated, "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value", Gauge, "partitions",
			"partitions this broker leads whose ISR is smaller than their replica set"},
		{OfflineReplicas, "kafka.server:type=ReplicaManager,name=OfflineReplicaCount", "Value", Gauge, "replicas",
			"replicas on this broker that are offline (their log directory failed)"},
		{ISRShrinks, "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", "Count", Counter, "shrinks",
			"ISR shrinks this broker made as a leader, since it started"},
		{ISRExpands, "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec", "Count", Counter, "expands",
			"ISR expands this broker made as a leader, since it started"},
		{FailedISRUpdates, "kafka.server:type=ReplicaManager,name=FailedIsrUpdatesPerSec", "Count", Counter, "updates",
			"ISR changes this broker asked the controller for and did not get, since it started"},
		{MaxFetcherLag, "kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica", "Value", Gauge, "records",
			"the largest lag, in records, of this broker's replica fetchers behind their leaders"},
		{OfflinePartitions, "kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "Value", Gauge, "partitions",
			"partitions without a leader (reported by the active controller)"},
		{ActiveController, "kafka.controller:type=KafkaController,name=ActiveControllerCount", "Value", Gauge, "controllers",
			"1 on the active controller, 0 elsewhere"},
	}
}

// Lookup returns the metric named n.
func Lookup(n Name) (Metric, bool) {
	for _, m := range All() {
		if m.Name == n {
			return m, true
		}
	}
	return Metric{}, false
}

// Version is the version of metrics.jsonl written here.
const Version = 1

// Header is the first line of metrics.jsonl.
type Header struct {
	Version int `json:"verity_metrics"`
	// IntervalMS is the time between two samples of a node.
	IntervalMS int64 `json:"interval_ms"`
	// Source says how the metrics were read (the JMX agent and its version).
	Source  string   `json:"source"`
	Metrics []Metric `json:"metrics"`
}

// Sample is one node's answer at one time: every line after the header.
type Sample struct {
	// TimeMS is when the sample was asked for, in milliseconds since the history's start (the
	// time base of the history's ops).
	TimeMS int64 `json:"t_ms"`
	Node   int   `json:"node"`
	// Values has the metrics the node has; empty when it did not answer.
	Values map[Name]float64 `json:"values,omitempty"`
	// Error says why the node did not answer (stopped, paused, timed out).
	Error string `json:"error,omitempty"`
}

// Writer appends samples to a metrics.jsonl; safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	buf *bufio.Writer
	err error
}

// Create starts a metrics.jsonl at path with its header.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the metrics file: %w", err)
	}
	w := &Writer{f: f, buf: bufio.NewWriter(f)}
	h.Version = Version
	if err := w.line(h); err != nil {
		_ = f.Close()
		return nil, err
	}
	return w, nil
}

func (w *Writer) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("writing the metrics file: %w", err)
	}
	_, _ = w.buf.Write(b)
	if err := w.buf.WriteByte('\n'); err != nil {
		return fmt.Errorf("writing the metrics file: %w", err)
	}
	return nil
}

// Write appends one sample; the first error is kept and returned by Close as well.
func (w *Writer) Write(s Sample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.line(s)
	}
	return w.err
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.err, w.buf.Flush(), w.f.Close())
}

// File is a metrics.jsonl read whole.
type File struct {
	Header  Header
	Samples []Sample
}

// Read reads a metrics.jsonl.
func Read(r io.Reader) (*File, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	dec.DisallowUnknownFields()
	var h Header
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("metrics file: header: %w", err)
	}
	if h.Version != Version {
		return nil, fmt.Errorf("metrics file: version %d; this Verity reads version %d", h.Version, Version)
	}
	var out []Sample
	for line := 2; ; line++ {
		var s Sample
		err := dec.Decode(&s)
		if errors.Is(err, io.EOF) {
			return &File{Header: h, Samples: out}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("metrics file: line %d: %w", line, err)
		}
		for n := range s.Values {
			if _, ok := Lookup(n); !ok {
				return nil, fmt.Errorf("metrics file: line %d: unknown metric %q", line, n)
			}
		}
		out = append(out, s)
	}
}

// ReadFile reads the metrics.jsonl at path.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}
