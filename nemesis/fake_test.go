package nemesis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/lazyfs/control"
)

// fakeCluster is a Cluster in memory: it applies node and link actions to its state, logs
// them, and answers partition questions from a table.
type fakeCluster struct {
	brokers, controllers []int

	mu          sync.Mutex
	states      map[int]harness.NodeState
	cuts        map[harness.Link]harness.CutKind
	toxics      map[harness.Link][]harness.Toxic
	parts       map[string]harness.PartitionState
	calls       []string
	unhealthy   error // WaitHealthy waits for ctx and returns this, when set
	failHealthy int   // the first failHealthy calls of WaitHealthy fail at once
	healthy     int   // WaitHealthy calls
	logs        map[int]string
	failOn      string // an action ("kill 2") that fails
	refuseStray bool   // the leader refuses stray transactional produces (verification on)
	powerLoss   bool   // the nodes run on the lazy filesystem
	cutPending  map[int]bool
	drops       map[int]harness.Drop
	diskHalts   map[int]bool // the nodes whose broker a disk fault stops
	diskRules   map[int]control.Faults
	diskSetAt   map[int]time.Time
	diskSetFail bool // SetDiskFaults fails, leaving the rules set before
	images      harness.Images
}

func newFake(brokers int, dedicated bool) *fakeCluster {
	f := &fakeCluster{states: map[int]harness.NodeState{}, cuts: map[harness.Link]harness.CutKind{},
		toxics: map[harness.Link][]harness.Toxic{}, parts: map[string]harness.PartitionState{}, logs: map[int]string{},
		cutPending: map[int]bool{}, drops: map[int]harness.Drop{}}
	for i := 1; i <= brokers; i++ {
		f.brokers = append(f.brokers, i)
		if !dedicated {
			f.controllers = append(f.controllers, i)
		}
	}
	if dedicated {
		f.controllers = []int{101, 102, 103}
	}
	for _, id := range allNodes(f) {
		f.states[id] = harness.NodeRunning
	}
	return f
}

func (f *fakeCluster) setPartition(topic string, p int32, leader int32, replicas, isr []int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts[fmt.Sprintf("%s-%d", topic, p)] = harness.PartitionState{Topic: topic, Partition: p, Leader: leader,
		LeaderEpoch: 3, Replicas: replicas, ISR: isr}
}

func (f *fakeCluster) log(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := fmt.Sprintf(format, args...)
	f.calls = append(f.calls, c)
	if f.failOn == c {
		return errors.New("injected failure of " + c)
	}
	return nil
}

func (f *fakeCluster) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeCluster) Brokers() []int     { return slices.Clone(f.brokers) }
func (f *fakeCluster) Controllers() []int { return slices.Clone(f.controllers) }
func (f *fakeCluster) Bootstrap() []string {
	return []string{"127.0.0.1:1"}
}
func (f *fakeCluster) isBroker(id int) bool     { return slices.Contains(f.brokers, id) }
func (f *fakeCluster) isController(id int) bool { return slices.Contains(f.controllers, id) }

// Links mirrors harness: client->broker, and i->j when both are brokers or j is a controller.
func (f *fakeCluster) Links() []harness.Link {
	var ls []harness.Link
	for _, b := range f.brokers {
		ls = append(ls, harness.Link{From: harness.ClientEndpoint, To: b})
	}
	for _, from := range allNodes(f) {
		for _, to := range allNodes(f) {
			if from != to && ((f.isBroker(from) && f.isBroker(to)) || f.isController(to)) {
				ls = append(ls, harness.Link{From: from, To: to})
			}
		}
	}
	return ls
}

func (f *fakeCluster) NodeStates() map[int]harness.NodeState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int]harness.NodeState{}
	for k, v := range f.states {
		out[k] = v
	}
	return out
}

func (f *fakeCluster) Cuts() map[harness.Link]harness.CutKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[harness.Link]harness.CutKind{}
	for k, v := range f.cuts {
		out[k] = v
	}
	return out
}

func (f *fakeCluster) setState(id int, s harness.NodeState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[id] = s
}

func (f *fakeCluster) node(verb string, id int, s harness.NodeState) error {
	if err := f.log("%s %d", verb, id); err != nil {
		return err
	}
	if _, ok := f.states[id]; !ok {
		return fmt.Errorf("no node %d", id)
	}
	f.setState(id, s)
	return nil
}

func (f *fakeCluster) Kill(_ context.Context, id int) error {
	return f.node("kill", id, harness.NodeStopped)
}
func (f *fakeCluster) Stop(_ context.Context, id int) error {
	return f.node("stop", id, harness.NodeStopped)
}
func (f *fakeCluster) Start(_ context.Context, id int) error {
	if err := f.node("start", id, harness.NodeRunning); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cutPending[id] {
		// What a node drops is its own: the fake makes it tell which node dropped it.
		f.drops[id] = harness.Drop{Files: int64(id), Bytes: int64(1000 * id)}
		delete(f.cutPending, id)
	}
	return nil
}
func (f *fakeCluster) PowerLoss() bool                       { return f.powerLoss }
func (f *fakeCluster) Images() harness.Images                { return f.images }
func (f *fakeCluster) SaramaConfig(id string) *sarama.Config { return harness.SaramaConfig(id) }
func (f *fakeCluster) SetFeatures(_ context.Context, l kafkaconf.FeatureLevels) error {
	return f.log("set-features %s", l)
}
func (f *fakeCluster) Features(context.Context) (harness.FeatureState, error) {
	return harness.FeatureState{Finalized: kafkaconf.FeatureLevels{kafkaconf.FeatureMetadata: 29},
		Supported: kafkaconf.FeatureLevels{kafkaconf.FeatureMetadata: 30}}, nil
}
func (f *fakeCluster) KafkaVersion() kafkaconf.KafkaVersion   { return kafkaconf.DefaultKafkaVersion }
func (f *fakeCluster) NodeVersion(int) kafkaconf.KafkaVersion { return kafkaconf.DefaultKafkaVersion }
func (f *fakeCluster) Upgrade(_ context.Context, id int, v kafkaconf.KafkaVersion) error {
	return f.log("upgrade %d %s", id, v)
}
func (f *fakeCluster) StrayTxnProduce(_ context.Context, topic string, partition int32, txnID, _ string) (int64, error) {
	if err := f.log("stray %s-%d %s", topic, partition, txnID); err != nil {
		return -1, err
	}
	if f.refuseStray {
		return -1, fmt.Errorf("a stray transactional produce to %s-%d: %w: TRANSACTION_ABORTABLE", topic, partition, harness.ErrStrayRefused)
	}
	return 7, nil
}
func (f *fakeCluster) PowerCut(_ context.Context, id int) error {
	if !f.powerLoss {
		return errors.New("no lazy filesystem")
	}
	if err := f.node("power-cut", id, harness.NodeStopped); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cutPending[id] = true
	delete(f.drops, id)
	return nil
}
func (f *fakeCluster) SetDiskFaults(_ context.Context, id int, rules control.Faults) error {
	if !f.powerLoss {
		return errors.New("no lazy filesystem")
	}
	if f.diskSetFail {
		return errors.New("the daemon did not answer")
	}
	f.mu.Lock()
	if f.diskRules == nil {
		f.diskRules, f.diskSetAt = map[int]control.Faults{}, map[int]time.Time{}
	}
	f.diskRules[id], f.diskSetAt[id] = rules, time.Now()
	f.mu.Unlock()
	return f.log("disk-faults %d %d rules", id, len(rules.Rules))
}
func (f *fakeCluster) ClearDiskFaults(_ context.Context, id int) (control.FaultStatus, error) {
	if err := f.log("disk-clear %d", id); err != nil {
		return control.FaultStatus{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.diskHalts[id] {
		f.states[id] = harness.NodeStopped
	}
	st := control.FaultStatus{ClearedAt: "t", SetAt: f.diskSetAt[id].UTC().Format(time.RFC3339Nano)}
	for _, r := range f.diskRules[id].Rules {
		st.Rules = append(st.Rules, control.RuleStatus{Rule: r, Hits: int64(id), Paths: []string{"t-0/0.log"}})
	}
	return st, nil
}
func (f *fakeCluster) Dropped(id int) (harness.Drop, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.drops[id]
	return d, ok
}
func (f *fakeCluster) Pause(_ context.Context, id int) error {
	return f.node("pause", id, harness.NodePaused)
}
func (f *fakeCluster) Resume(_ context.Context, id int) error {
	return f.node("resume", id, harness.NodeRunning)
}
func (f *fakeCluster) WipeDisk(_ context.Context, id int) error {
	return f.node("wipe", id, harness.NodeRunning)
}

func (f *fakeCluster) Cut(_ context.Context, l harness.Link, kind harness.CutKind) error {
	if err := f.log("cut %s", l); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cuts[l] = kind
	return nil
}

func (f *fakeCluster) Heal(_ context.Context, l harness.Link) error {
	if err := f.log("heal %s", l); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cuts, l)
	return nil
}

func (f *fakeCluster) AddToxic(_ context.Context, l harness.Link, t harness.Toxic) (string, error) {
	if err := f.log("toxic %s %s", l, t.Name); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.toxics[l] {
		if x.Name == t.Name {
			return "", fmt.Errorf("toxic %s already on %s: 409", t.Name, l)
		}
	}
	f.toxics[l] = append(f.toxics[l], t)
	return t.Name, nil
}

func (f *fakeCluster) RemoveToxic(_ context.Context, l harness.Link, name string) error {
	if err := f.log("untoxic %s %s", l, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.toxics[l] = slices.DeleteFunc(f.toxics[l], func(t harness.Toxic) bool { return t.Name == name })
	if len(f.toxics[l]) == 0 {
		delete(f.toxics, l)
	}
	return nil
}

func (f *fakeCluster) Toxics() map[harness.Link][]harness.Toxic {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[harness.Link][]harness.Toxic{}
	for k, v := range f.toxics {
		out[k] = slices.Clone(v)
	}
	return out
}

func (f *fakeCluster) Restore(context.Context) error {
	_ = f.log("restore")
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.cuts)
	clear(f.toxics)
	for id := range f.states {
		f.states[id] = harness.NodeRunning
	}
	return nil
}

func (f *fakeCluster) WaitHealthy(ctx context.Context) error {
	f.mu.Lock()
	f.healthy++
	err := f.unhealthy
	if f.healthy <= f.failHealthy {
		f.mu.Unlock()
		return errors.New("cluster not healthy (registered brokers [] of [1 2 3] (describing the cluster: correlation ID didn't match))")
	}
	f.mu.Unlock()
	if err != nil {
		<-ctx.Done()
		return fmt.Errorf("cluster not healthy (%w): %w", err, ctx.Err())
	}
	return nil
}

func (f *fakeCluster) ResetAdmin() { _ = f.log("reset admin") }

func (f *fakeCluster) RegisteredBrokers(context.Context) ([]int32, error) {
	var out []int32
	for _, b := range f.brokers {
		if f.NodeStates()[b] == harness.NodeRunning {
			out = append(out, int32(b))
		}
	}
	return out, nil
}

func (f *fakeCluster) Describe(_ context.Context, topic string) ([]harness.PartitionState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []harness.PartitionState
	for _, p := range f.parts {
		if p.Topic == topic {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no topic %s", topic)
	}
	return out, nil
}

func (f *fakeCluster) DescribePartition(_ context.Context, topic string, partition int32) (harness.PartitionState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.parts[fmt.Sprintf("%s-%d", topic, partition)]
	if !ok {
		return harness.PartitionState{}, fmt.Errorf("topic %s has no partition %d", topic, partition)
	}
	return p, nil
}

func (f *fakeCluster) NodeLog(_ context.Context, id int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logs[id], nil
}

// fakeLocator answers from fields.
type fakeLocator struct {
	mu         sync.Mutex
	controller int
	epoch      int
	txn, group map[string]int
	share      map[string]int // "group topic-partition" -> share coordinator
	samples    func() []ISRSample
	minISR     int
}

func (l *fakeLocator) ActiveController(context.Context) (int, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.controller < 0 {
		return -1, -1, errors.New("no controller")
	}
	return l.controller, l.epoch, nil
}
func (l *fakeLocator) TxnCoordinator(_ context.Context, id string) (int, error) {
	if c, ok := l.txn[id]; ok {
		return c, nil
	}
	return -1, errors.New("unknown transactional id")
}
func (l *fakeLocator) GroupCoordinator(_ context.Context, g string) (int, error) {
	if c, ok := l.group[g]; ok {
		return c, nil
	}
	return -1, errors.New("unknown group")
}
func (l *fakeLocator) ShareCoordinator(_ context.Context, g, topic string, p int32) (int, error) {
	if c, ok := l.share[fmt.Sprintf("%s %s-%d", g, topic, p)]; ok {
		return c, nil
	}
	return -1, ErrNoShareState
}
func (l *fakeLocator) ISR(context.Context, []string) ([]ISRSample, error) {
	if l.samples == nil {
		return nil, errors.New("no samples")
	}
	return l.samples(), nil
}
func (l *fakeLocator) MinISR(context.Context, string) (int, error) { return l.minISR, nil }
func (l *fakeLocator) Close() error                                { return nil }

// memHistory is a history in memory, read back as ops.
type memHistory struct {
	buf bytes.Buffer
	mu  sync.Mutex
	w   *history.Writer
}

func newMemHistory(t *testing.T) *memHistory {
	t.Helper()
	h := &memHistory{}
	w, err := history.NewWriter(lockedWriter{h}, history.Header{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	return h
}

type lockedWriter struct{ h *memHistory }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.h.buf.Write(p)
}

func (h *memHistory) ops(t *testing.T) []history.Op {
	t.Helper()
	h.mu.Lock()
	data := slices.Clone(h.buf.Bytes())
	h.mu.Unlock()
	r, err := history.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out []history.Op
	for {
		var op history.Op
		err := r.Next(&op)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, op.Clone())
	}
}

// event is a nemesis op in short: "invoke kill [2]".
type event struct {
	Type history.Type
	F    string
	T    Targets
	Err  string
}

func (h *memHistory) events(t *testing.T) []event {
	t.Helper()
	var out []event
	for _, op := range h.ops(t) {
		if !op.Process.Nemesis {
			continue
		}
		var tg Targets
		if len(op.Value.Raw) > 0 && string(op.Value.Raw) != "null" {
			if err := json.Unmarshal(op.Value.Raw, &tg); err != nil {
				t.Fatalf("op %d: value %s: %v", op.Index, op.Value.Raw, err)
			}
		}
		out = append(out, event{op.Type, op.F, tg, op.Error})
	}
	return out
}

// short renders events as "invoke kill [2]" lines, for comparisons.
func short(es []event) []string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s %s %v", e.Type, e.F, e.T.Nodes))
	}
	return out
}

// The fake runs one service, PostgreSQL, whose kills and starts it logs.
func (f *fakeCluster) ServiceLinks() []harness.Link {
	return []harness.Link{{From: harness.ClientEndpoint, To: harness.PostgresEndpoint}}
}
func (f *fakeCluster) KillService(_ context.Context, endpoint int) error {
	return f.log("service-kill %d", endpoint)
}
func (f *fakeCluster) StartService(_ context.Context, endpoint int) error {
	return f.log("service-start %d", endpoint)
}
