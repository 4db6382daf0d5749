package workloads

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/history"
	"github.com/verity-kafka/verity/kafkaconf"
)

// Cluster is what a run needs of a cluster; *harness.Cluster has it.
type Cluster interface {
	Bootstrap() []string
	Brokers() []int
	Controllers() []int
	CreateTopic(ctx context.Context, t harness.TopicSpec) error
	Deviations() []string
}

// Services is what a cluster with side-effect services has (*harness.Cluster does): the
// addresses sinks write to, "" for a service it does not run.
type Services interface {
	PostgresDSN() string
	LedgerURL() string
}

// Release is what a cluster that knows its Kafka release has (*harness.Cluster does): the
// release, its feature levels for the header, and sarama configurations that speak no newer
// protocol than the release's.
type Release interface {
	KafkaVersion() kafkaconf.KafkaVersion
	Features(ctx context.Context) (harness.FeatureState, error)
	SaramaConfig(clientID string) *sarama.Config
}

// ProducerSpec is a group of identical producer instances, each its own history process.
type ProducerSpec struct {
	Instances int `json:"instances"` // default 1
	ProducerConfig
}

// Spec is one run: topics, a mix of workloads, how long, from which seed.
type Spec struct {
	// Name is the scenario's name, copied to the history's header.
	Name string `json:"scenario,omitempty"`
	// Seed: every random choice of the run comes from it (see NewRand).
	Seed int64 `json:"seed"`
	// Client is the Kafka client every workload drives (default kafkaconf.DefaultClient);
	// TxnProtocol caps the transaction protocol it may speak ("": the best it and the cluster
	// support).
	Client      kafkaconf.ClientName  `json:"client,omitempty"`
	TxnProtocol kafkaconf.TxnProtocol `json:"txn_protocol,omitempty"`
	// GroupProtocol is the consumer group protocol the group members speak ("": the client's
	// default, classic).
	GroupProtocol kafkaconf.GroupProtocol `json:"group_protocol,omitempty"`
	// ClientVersion is the client module's version ("": the one linked in). Another version runs
	// the workloads in a driver process (see Driver).
	ClientVersion string `json:"client_version,omitempty"`
	// ClientCommand, when set, is a program that serves Client over the remote client protocol
	// (docs/client-protocol.md) and every workload speaks to it: a user's build of a client, or
	// a Go client through the protocol (verity client serve). It must name Client in its hello.
	ClientCommand []string `json:"client_command,omitempty"`
	// clientLibrary is the library the client program said it runs.
	clientLibrary string
	// Duration of the workloads; the final reads come after it.
	Duration time.Duration `json:"duration"`
	// Until, when set, ends the workloads before Duration once it reports true: it is shown
	// every op this process records, as its completion is recorded (never two at once). A test
	// runs until what it checks has happened (a sink crashed twice), with Duration as a
	// deadline a loaded machine cannot miss. A driver's workloads (ClientVersion) are stopped
	// once it holds for an op they streamed.
	Until func(op history.Op) bool `json:"-"`
	// Topics are created before the workloads start (existing ones are left as they are).
	Topics        []harness.TopicSpec `json:"topics"`
	Producers     []ProducerSpec      `json:"producers,omitempty"`
	Transactional []TxnConfig         `json:"transactional,omitempty"`
	Processors    []ProcessorConfig   `json:"processors,omitempty"`
	Consumers     []ConsumerConfig    `json:"consumers,omitempty"`
	Sinks         []SinkConfig        `json:"sinks,omitempty"`
	// ShareGroups are share groups (KIP-932) and their members; a run has at most one, since
	// the history's header states one.
	ShareGroups []ShareGroupConfig `json:"share_groups,omitempty"`
	// FinalRead: Topics defaults to every topic of the spec; Isolations to both levels when
	// the run has transactional workloads, read_uncommitted otherwise.
	FinalRead FinalReadConfig `json:"final_read,omitzero"`
	// Nemesis, when set, runs beside the workloads with a context that ends with Duration,
	// recording its faults through the recorder it is given. It must heal everything before
	// it returns: the final reads start after it and the workloads have ended.
	Nemesis func(ctx context.Context, rec Recorder) error `json:"-"`
	// ScheduledFaults and Scenario go to the history header's config as they are: the faults
	// the run's schedule contains, and the scenario that made this spec (for a reader of the
	// history; the checker does not judge by them).
	ScheduledFaults []string        `json:"-"`
	Scenario        json.RawMessage `json:"-"`
	// Liveness are the bounds on progress the scenario states, for the header's config, which
	// the checker judges them from.
	Liveness *history.LivenessBounds `json:"-"`
	// Sarama, Franz and Log as in Env.
	Sarama func(clientID string) *sarama.Config `json:"-"`
	Franz  func(clientID string) []kgo.Opt      `json:"-"`
	Log    *slog.Logger                         `json:"-"`
}

// Result is what a run did.
type Result struct {
	Path       string
	Header     history.Header
	Ops, Bytes int64
	Elapsed    time.Duration // workloads only
	Workloads
	FinalRead FinalReadStats
}

// Workloads is what each workload instance did, by kind.
type Workloads struct {
	Producers     []ProducerStats  `json:"producers,omitempty"`
	Transactional []TxnStats       `json:"transactional,omitempty"`
	Processors    []ProcessorStats `json:"processors,omitempty"`
	Consumers     []ConsumerStats  `json:"consumers,omitempty"`
	Sinks         []SinkStats      `json:"sinks,omitempty"`
	Relays        []RelayStats     `json:"relays,omitempty"`
	ShareMembers  []ShareStats     `json:"share_members,omitempty"`
	ShareDrain    *ShareStats      `json:"share_drain,omitempty"`
}

// Run runs spec against c and records everything into a new history at path: creates the
// topics, runs every workload (and the nemesis) for spec.Duration, waits for them to finish
// what they have under way, then scans every partition. The history is complete and closed when
// Run returns, even with an error (a workload that could not run, a final read that could not
// finish): what it holds is still checkable, and the error says what is missing.
func Run(ctx context.Context, c Cluster, path string, spec Spec) (*Result, error) {
	log := spec.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if spec.Duration <= 0 {
		return nil, errors.New("run: duration must be positive")
	}
	// Resolve every configuration before anything starts, so that a bad one fails the run
	// at once, and so that the header states the settings the workloads really use.
	plan, err := planRun(spec)
	if err != nil {
		return nil, err
	}
	var driver string
	if client, driven := spec.driven(); driven {
		if driver, err = BuildDriver(ctx, client, spec.ClientVersion, log); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	for _, t := range spec.Topics {
		if err := c.CreateTopic(ctx, t); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	env := Env{Brokers: c.Bootstrap(), Seed: spec.Seed, Client: spec.Client, TxnProtocol: spec.TxnProtocol, GroupProtocol: spec.GroupProtocol,
		Sarama: spec.Sarama, Franz: spec.Franz, Log: log}
	if svc, ok := c.(Services); ok {
		env.Postgres, env.Ledger = svc.PostgresDSN(), svc.LedgerURL()
	}
	var kafka *history.KafkaInfo
	if r, ok := c.(Release); ok {
		if env.Sarama == nil {
			env.Sarama = r.SaramaConfig
		}
		st, err := r.Features(ctx)
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		kafka = &history.KafkaInfo{Version: r.KafkaVersion(), Features: st.Finalized}
	}
	if env, err = env.settled(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if client, err := spec.client(); err == nil && (client.IsProgram() || len(spec.ClientCommand) > 0) {
		stderr := logLines(log, "client program", string(client.Name))
		defer stderr.Close()
		prog, err := StartProgram(ctx, env, spec.ClientVersion, spec.ClientCommand, stderr)
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		// The header states what the program says it runs.
		spec.ClientVersion, spec.clientLibrary = prog.Info().Version, prog.Info().Library
		defer func() {
			if err := prog.Close(); err != nil {
				log.Warn("stopping the client program", "err", err)
			}
		}()
		env.Program = prog
	}
	var txn kafkaconf.TxnProtocol
	if spec.Uses().Transactions {
		if txn, err = txnProtocol(ctx, env); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	config, err := headerConfig(spec, plan, len(c.Brokers()), c.Controllers(), c.Deviations(), txn)
	if err != nil {
		return nil, err
	}
	config.Kafka = kafka
	w, err := history.Create(path, history.Header{Seed: spec.Seed, Config: config})
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	res := &Result{Path: path, Header: w.Header()}
	env.Recorder, env.Processes = w, NewProcesses(plan.next+plan.final.Workers)
	env.RunTag = res.Header.Started
	if err := prepareSinks(ctx, env, plan.sinkConfigs()); err != nil {
		_ = w.Close()
		return res, fmt.Errorf("run: %w", err)
	}
	if d := plan.drain; d != nil {
		if driver != "" {
			_ = w.Close()
			return res, errors.New("run: share groups run on the client linked into verity or the Java program, not through a driver of another version")
		}
		if err := PrepareShareGroup(ctx, env, d.cfg); err != nil {
			_ = w.Close()
			return res, fmt.Errorf("run: %w", err)
		}
	}
	var errs []error
	if driver != "" {
		job := driverJob{Header: res.Header, Spec: spec, Brokers: env.Brokers, Postgres: env.Postgres, Ledger: env.Ledger,
			RunTag: env.RunTag, LogLevel: logLevel(log)}
		if kafka != nil {
			job.KafkaVersion = kafka.Version
		}
		errs = runDriven(ctx, driver, job, env, w, spec, res)
	} else {
		errs = runWorkloads(ctx, env, spec, plan, res)
	}
	if err := drainRelays(ctx, env, plan, res.Relays); err != nil {
		errs = append(errs, err)
	}
	if d := plan.drain; d != nil {
		st, err := DrainShareGroup(ctx, env, d.p, d.cfg)
		res.ShareDrain = &st
		if err != nil {
			errs = append(errs, fmt.Errorf("draining share group %s: %w", d.cfg.Group, err))
		}
	}

	frStats, frErr := FinalRead(ctx, env, plan.next, plan.final)
	res.FinalRead = frStats
	if frErr != nil {
		errs = append(errs, fmt.Errorf("final read: %w", frErr))
	}
	if err := readSinks(ctx, env, plan.sinkConfigs()); err != nil {
		errs = append(errs, fmt.Errorf("reading the sinks: %w", err))
	}
	res.Ops, res.Bytes = w.Count(), w.Bytes()
	if err := w.Close(); err != nil {
		errs = append(errs, err)
	}
	log.Info("run done", "history", path, "ops", res.Ops, "bytes", res.Bytes, "final_read_complete", frStats.AllComplete())
	return res, errors.Join(errs...)
}

// client is the spec's client as kafkaconf describes it.
func (spec Spec) client() (kafkaconf.Client, error) {
	name := cmp.Or(spec.Client, kafkaconf.DefaultClient)
	if _, err := kafkaconf.ParseClient(string(name)); err != nil {
		return kafkaconf.Client{}, fmt.Errorf("run: %w", err)
	}
	c, _ := kafkaconf.LookupClient(name)
	return c, nil
}

func joinProtocols(ps []kafkaconf.TxnProtocol) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, " and ")
}

// runPlan is a spec with every configuration resolved and every process numbered.
type runPlan struct {
	producers []numbered[ProducerConfig]
	txns      []numbered[TxnConfig]
	procs     []numbered[ProcessorConfig]
	consumers []numbered[ConsumerConfig]
	sinks     []numbered[SinkConfig]       // one per instance
	relays    []numbered[SinkConfig]       // one per sink that relays
	shares    []numbered[ShareGroupConfig] // one per share group member
	drain     *numbered[ShareGroupConfig]  // the share group's drain member
	final     FinalReadConfig
	next      int // first process number after the configured instances
	warnings  []string
}

type numbered[T any] struct {
	p   int
	cfg T
}

// planRun numbers the configured instances in spec order (producers, transactional producers,
// processors, consumers, sinks, the sinks' relays), then the final readers.
func planRun(spec Spec) (runPlan, error) {
	var pl runPlan
	client, err := spec.client()
	if err != nil {
		return pl, err
	}
	p := 0
	for i, ps := range spec.Producers {
		cfg, warns, err := ps.ProducerConfig.Resolved(client)
		if err != nil {
			return pl, fmt.Errorf("run: producers[%d]: %w", i, err)
		}
		pl.warnings = append(pl.warnings, warns...)
		for range max(ps.Instances, 1) {
			pl.producers = append(pl.producers, numbered[ProducerConfig]{p, cfg})
			p++
		}
	}
	for i, tc := range spec.Transactional {
		cfg, err := tc.resolved(p)
		if err != nil {
			return pl, fmt.Errorf("run: transactional[%d]: %w", i, err)
		}
		pl.txns = append(pl.txns, numbered[TxnConfig]{p, cfg})
		p++
	}
	for i, pc := range spec.Processors {
		cfg, err := pc.resolved(p)
		if err != nil {
			return pl, fmt.Errorf("run: processors[%d]: %w", i, err)
		}
		pl.procs = append(pl.procs, numbered[ProcessorConfig]{p, cfg})
		p++
	}
	for i, cc := range spec.Consumers {
		cfg, err := cc.resolved(p)
		if err != nil {
			return pl, fmt.Errorf("run: consumers[%d]: %w", i, err)
		}
		pl.consumers = append(pl.consumers, numbered[ConsumerConfig]{p, cfg})
		p++
	}
	names := map[string]bool{}
	for i, sc := range spec.Sinks {
		cfg, err := sc.resolved()
		if err != nil {
			return pl, fmt.Errorf("run: sinks[%d]: %w", i, err)
		}
		if names[cfg.Name] {
			return pl, fmt.Errorf("run: sinks[%d]: a second sink named %q (each needs its own name: it names its tables)", i, cfg.Name)
		}
		names[cfg.Name] = true
		if cfg.Outbox != "" && !slices.ContainsFunc(spec.Topics, func(t harness.TopicSpec) bool { return t.Name == cfg.Outbox }) {
			return pl, fmt.Errorf("run: sinks[%d]: outbox topic %s is not one of the run's topics (topics)", i, cfg.Outbox)
		}
		for range cfg.Instances {
			pl.sinks = append(pl.sinks, numbered[SinkConfig]{p, cfg})
			p++
		}
	}
	for _, n := range pl.sinkConfigs() {
		if info, _ := n.Mode.Info(); info.Relays {
			pl.relays = append(pl.relays, numbered[SinkConfig]{p, n})
			p++
		}
	}
	switch len(spec.ShareGroups) {
	case 0:
	case 1:
		cfg, err := spec.ShareGroups[0].resolved()
		if err != nil {
			return pl, fmt.Errorf("run: share_groups[0]: %w", err)
		}
		if !slices.Contains(client.Capabilities, kafkaconf.CapShareGroups) {
			return pl, fmt.Errorf("run: share_groups: %s has no share-group consumer (KIP-932); run them with a client that has (verity list clients: share-groups)", client.Name)
		}
		for range cfg.Members {
			pl.shares = append(pl.shares, numbered[ShareGroupConfig]{p, cfg})
			p++
		}
		pl.drain = &numbered[ShareGroupConfig]{p, cfg}
		p++
	default:
		return pl, fmt.Errorf("run: share_groups: %d groups; a run has one share group (the history's header states one)", len(spec.ShareGroups))
	}
	pl.next = p
	transactional := spec.Uses().Transactions
	if spec.GroupProtocol != "" && !slices.Contains(client.GroupProtocols, spec.GroupProtocol) {
		return pl, fmt.Errorf("run: %s's group members do not speak group protocol %s", client.Name, spec.GroupProtocol)
	}
	if transactional && spec.TxnProtocol != "" && !slices.Contains(client.TxnProtocols, spec.TxnProtocol) {
		return pl, fmt.Errorf("run: %s speaks transaction protocol %s only, not %s", client.Name, joinProtocols(client.TxnProtocols), spec.TxnProtocol)
	}
	fr := spec.FinalRead
	if len(fr.Topics) == 0 {
		for _, t := range spec.Topics {
			fr.Topics = append(fr.Topics, t.Name)
		}
	}
	if len(fr.Isolations) == 0 && !transactional {
		fr.Isolations = []kafkaconf.Isolation{kafkaconf.ReadUncommitted}
	}
	if pl.final, err = fr.withDefaults(); err != nil {
		return pl, fmt.Errorf("run: %w", err)
	}
	return pl, nil
}

// HeaderConfig is the history header's "config" for a run of spec on a cluster of brokers
// brokers whose settings depart from Kafka's by deviations: every producer process's and
// topic's settings, stated in full as the workloads configure the client with them, and the
// resolved workloads. It is the one place a header is made: Run writes it, and a runner predicts
// a scenario's header with it before anything starts.
//
// txn is the transaction protocol the run's transactional clients speak ("" when it has none):
// Run asks the cluster; a prediction takes what the client prefers within the cap.
func HeaderConfig(spec Spec, brokers int, controllers []int, deviations []string, txn kafkaconf.TxnProtocol) (history.Config, error) {
	pl, err := planRun(spec)
	if err != nil {
		return history.Config{}, err
	}
	return headerConfig(spec, pl, brokers, controllers, deviations, txn)
}

// Uses is what the spec's workloads ask of the cluster, by kafkaconf's role table.
func (spec Spec) Uses() kafkaconf.Uses {
	count := map[kafkaconf.RoleName]int{
		kafkaconf.RoleTxnProducer: len(spec.Transactional),
		kafkaconf.RoleProcessor:   len(spec.Processors),
	}
	for _, p := range spec.Producers {
		count[kafkaconf.RoleProducer] += max(p.Instances, 1)
	}
	for _, c := range spec.Consumers {
		if c.Mode == Subscribe {
			count[kafkaconf.RoleGroupConsumer]++
		} else {
			count[kafkaconf.RoleConsumer]++
		}
	}
	for _, s := range spec.Sinks {
		count[kafkaconf.RoleSink] += max(s.Instances, 1)
	}
	for _, g := range spec.ShareGroups {
		count[kafkaconf.RoleShareMember] += max(g.Members, 1)
	}
	return kafkaconf.UsesOf(count)
}

// PredictTxnProtocol is the transaction protocol spec's transactional clients will speak on a
// cluster that supports both (Kafka 4.3 finalises transaction.version 2 on a new cluster): the
// client's preferred one within the spec's cap; "" when the spec has none.
func PredictTxnProtocol(spec Spec) kafkaconf.TxnProtocol {
	if !spec.Uses().Transactions {
		return ""
	}
	c, err := spec.client()
	if err != nil || len(c.TxnProtocols) == 0 {
		return ""
	}
	if spec.TxnProtocol != "" {
		return spec.TxnProtocol
	}
	return c.TxnProtocols[0]
}

// resolvedWorkloads is the header's "workloads": the run as planned, for a reader.
type resolvedWorkloads struct {
	Duration      kafkaconf.Duration           `json:"duration"`
	Topics        []harness.TopicSpec          `json:"topics"`
	Producers     []numbered[ProducerConfig]   `json:"producers,omitempty"`
	Transactional []numbered[TxnConfig]        `json:"transactional,omitempty"`
	Processors    []numbered[ProcessorConfig]  `json:"processors,omitempty"`
	Consumers     []numbered[ConsumerConfig]   `json:"consumers,omitempty"`
	Sinks         []numbered[SinkConfig]       `json:"sinks,omitempty"`
	ShareMembers  []numbered[ShareGroupConfig] `json:"share_members,omitempty"`
	FinalRead     FinalReadConfig              `json:"final_read"`
	Warnings      []string                     `json:"warnings,omitempty"`
}

func headerConfig(spec Spec, pl runPlan, brokers int, controllers []int, deviations []string, txn kafkaconf.TxnProtocol) (history.Config, error) {
	client, err := spec.client()
	if err != nil {
		return history.Config{}, err
	}
	c := history.Config{Scenario: spec.Name, Processes: map[int]kafkaconf.ProducerConfig{}, Topics: map[string]kafkaconf.TopicConfig{},
		Isolation: kafkaconf.ReadCommitted, Faults: spec.ScheduledFaults, Controllers: controllers, Deviations: deviations, Spec: spec.Scenario, Liveness: spec.Liveness,
		Client: &history.ClientInfo{Name: client.Name, Module: cmp.Or(spec.clientLibrary, client.Library()), Version: cmp.Or(spec.ClientVersion, client.Version()), TxnProtocol: txn,
			GroupProtocol: groupProtocol(spec, client)}}
	for _, n := range pl.producers {
		c.Processes[n.p] = n.cfg.Settings(client).Config()
	}
	for _, n := range pl.txns {
		c.Processes[n.p] = transactional(client, n.cfg.TxnClientConfig).Config()
	}
	for _, n := range pl.procs {
		c.Processes[n.p] = transactional(client, n.cfg.TxnClientConfig).Config()
	}
	for _, n := range pl.sinks {
		if c.Sinks == nil {
			c.Sinks = map[string]history.SinkInfo{}
		}
		si := c.Sinks[n.cfg.Name]
		si.Mode, si.Topic, si.Group, si.Outbox = n.cfg.Mode, n.cfg.Topic, n.cfg.Group, n.cfg.Outbox
		si.Processes = append(si.Processes, n.p)
		c.Sinks[n.cfg.Name] = si
	}
	for _, n := range pl.relays {
		si := c.Sinks[n.cfg.Name]
		si.Relay = new(n.p)
		c.Sinks[n.cfg.Name] = si
	}
	broker := map[string]string{} // the brokers' settings that depart from Kafka's defaults
	for _, d := range deviations {
		if k, v, ok := strings.Cut(d, "="); ok {
			broker[k] = v
		}
	}
	if pl.drain != nil {
		c.Share = pl.drain.cfg.header(broker)
	}
	for _, t := range spec.Topics {
		tc := kafkaconf.TopicConfig{ReplicationFactor: new(cmp.Or(t.RF, brokers)), UncleanLeaderElection: t.Unclean}
		if tc.FlushMessages, err = kafkaconf.FlushMessagesOf(t.Config, broker); err != nil {
			return c, fmt.Errorf("run: topic %s: %w", t.Name, err)
		}
		// MinISR 0 leaves the broker's setting, which the workloads do not know: the header says
		// nothing, and the checker names what it assumes.
		if t.MinISR > 0 {
			tc.MinInsyncReplicas = new(t.MinISR)
		}
		c.Topics[t.Name] = tc
	}
	w, err := json.Marshal(resolvedWorkloads{Duration: kafkaconf.Duration(spec.Duration), Topics: spec.Topics,
		Producers: pl.producers, Transactional: pl.txns, Processors: pl.procs, Consumers: pl.consumers,
		Sinks: pl.sinks, ShareMembers: pl.shares, FinalRead: pl.final, Warnings: pl.warnings})
	if err != nil {
		return c, fmt.Errorf("run: encoding the header's workloads: %w", err)
	}
	c.Workloads = w
	return c, nil
}

// MarshalJSON shows a numbered configuration with its process.
func (n numbered[T]) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Process int `json:"process"`
		Config  T   `json:"config"`
	}{n.p, n.cfg})
}

// startAll starts one goroutine per configured instance of a workload kind and returns the slice
// each fills with its stats when it ends (read it after wg.Wait).
func startAll[C, S any](ctx context.Context, wg *sync.WaitGroup, env Env, ns []numbered[C],
	run func(context.Context, Env, int, C) (S, error), fail func(error)) []S {
	stats := make([]S, len(ns))
	for i, n := range ns {
		wg.Go(func() {
			st, err := run(ctx, env, n.p, n.cfg)
			stats[i] = st
			fail(err)
		})
	}
	return stats
}

// runWorkloads runs every workload until spec.Duration has passed and each has finished what it
// had under way. The first workload that fails stops the others: a run without one of its
// workloads is not the run that was asked for.
func runWorkloads(ctx context.Context, env Env, spec Spec, pl runPlan, res *Result) []error {
	wctx, cancel := context.WithTimeout(ctx, spec.Duration)
	defer cancel()
	if spec.Until != nil {
		env.Recorder = &untilRecorder{Recorder: env.Recorder, until: spec.Until, stop: cancel}
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	began := time.Now()
	fail := func(err error) {
		if err == nil {
			return
		}
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		cancel()
	}
	res.Producers = startAll(wctx, &wg, env, pl.producers, RunProducer, fail)
	res.Transactional = startAll(wctx, &wg, env, pl.txns, RunTxnProducer, fail)
	res.Processors = startAll(wctx, &wg, env, pl.procs, RunProcessor, fail)
	res.Consumers = startAll(wctx, &wg, env, pl.consumers, RunConsumer, fail)
	res.Sinks = startAll(wctx, &wg, env, pl.sinks, RunSink, fail)
	res.Relays = startAll(wctx, &wg, env, pl.relays, RunRelay, fail)
	res.ShareMembers = startAll(wctx, &wg, env, pl.shares, RunShareMember, fail)
	if spec.Nemesis != nil {
		wg.Go(func() {
			if err := spec.Nemesis(wctx, env.Recorder); err != nil {
				fail(fmt.Errorf("nemesis: %w", err))
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(began)
	return errs
}

// untilRecorder shows Spec.Until every completion it records and ends the workloads once Until
// reports true.
type untilRecorder struct {
	Recorder
	mu    sync.Mutex
	until func(history.Op) bool
	done  bool
	stop  context.CancelFunc
}

func (r *untilRecorder) Complete(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	op, err := r.Recorder.Complete(inv, t, v, e)
	r.show(op, err)
	return op, err
}

func (r *untilRecorder) CompleteAsync(inv history.Op, t history.Type, v history.Payload, e string) (history.Op, error) {
	op, err := r.Recorder.CompleteAsync(inv, t, v, e)
	r.show(op, err)
	return op, err
}

func (r *untilRecorder) show(op history.Op, err error) {
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done && r.until(op) {
		r.done = true
		r.stop()
	}
}

// groupProtocol is the group protocol spec's group members speak: "" when it has none.
func groupProtocol(spec Spec, client kafkaconf.Client) kafkaconf.GroupProtocol {
	if !spec.Uses().Groups || len(client.GroupProtocols) == 0 {
		return ""
	}
	return cmp.Or(spec.GroupProtocol, client.GroupProtocols[0])
}
