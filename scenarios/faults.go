package scenarios

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-kafka/verity/harness"
	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/kafkatoxic"
	"github.com/verity-kafka/verity/nemesis"
	"github.com/verity-kafka/verity/sink"
)

// FaultName is the name of a fault of the catalogue: one of FaultSpecs.
type FaultName string

// The fault catalogue of the nemesis issue. The nemesis maps each name onto its fault value.
const (
	FaultKill              FaultName = "kill"
	FaultStop              FaultName = "stop"
	FaultPause             FaultName = "pause"
	FaultRollingBounce     FaultName = "rolling-bounce-clean"
	FaultRollingBounceHard FaultName = "rolling-bounce-hard"
	FaultDiskLoss          FaultName = "disk-loss"
	FaultPowerLoss         FaultName = "power-loss"
	FaultDiskError         FaultName = "disk-error"
	FaultDiskFull          FaultName = "disk-full"
	FaultSlowDisk          FaultName = "slow-disk"
	FaultIsolate           FaultName = "isolate"
	FaultSplitMajority     FaultName = "split-majority"
	FaultBridge            FaultName = "bridge"
	FaultLeaderCut         FaultName = "leader-cut-from-followers"
	FaultOneWayCut         FaultName = "one-way-cut"
	FaultClientCut         FaultName = "client-cut"
	FaultLatency           FaultName = "latency"
	FaultBandwidth         FaultName = "bandwidth"
	FaultBlackholeTimeout  FaultName = "blackhole-timeout"
	FaultResetPeer         FaultName = "reset-peer"
	FaultSlowClose         FaultName = "slow-close"
	FaultLimitData         FaultName = "limit-data"
	FaultDropRequest       FaultName = "drop-request"
	FaultHoldRequest       FaultName = "hold-request"
	FaultDropResponse      FaultName = "drop-response"
	FaultSetFeature        FaultName = "set-feature"
	FaultStrayTxnProduce   FaultName = "stray-txn-produce"
	FaultRollingUpgrade    FaultName = "rolling-upgrade"
	FaultAckLoss           FaultName = "ack-loss"
	FaultSinkCut           FaultName = "sink-cut"
	FaultServiceKill       FaultName = "service-kill"
	FaultCompound          FaultName = "compound"
	FaultNone              FaultName = "none"
)

// Role is how a target's nodes are chosen: one of RoleSpecs.
type Role string

// Target roles, resolved from the live cluster when the fault is injected.
const (
	RoleLeaderOf         Role = "leader-of"
	RoleFollowerOf       Role = "follower-of"
	RoleFollowersOf      Role = "followers-of"
	RoleReplicasOf       Role = "replicas-of"
	RoleControllers      Role = "controllers"
	RoleController       Role = "controller"
	RoleTxnCoordinator   Role = "txn-coordinator"
	RoleGroupCoordinator Role = "group-coordinator"
	RoleShareCoordinator Role = "share-coordinator"
	RoleRandomMinority   Role = "random-minority"
	RoleRandomMajority   Role = "random-majority"
	RoleNode             Role = "node"
)

// Fault kinds (FaultSpec.Kind).
const (
	KindProcess  = "process"
	KindDisk     = "disk"
	KindNetwork  = "network"
	KindToxic    = "toxic"
	KindAckLoss  = "ack-loss"
	KindService  = "service"
	KindFeature  = "feature"
	KindClient   = "client"
	KindCompound = "compound"
	KindNone     = "none"
)

// Param names (the yaml names of Params' fields).
const (
	ParamLinks    = "links"
	ParamCut      = "cut"
	ParamDelay    = "delay"
	ParamJitter   = "jitter"
	ParamRateKBps = "rate_kbps"
	ParamAfter    = "after"
	ParamBytes    = "bytes"
	ParamHold     = "hold"
	ParamTo       = "to"
	ParamGate     = "gate"
	ParamService  = "service"
	ParamAPI      = "api"
	ParamNth      = "nth"
	ParamUntil    = "until"
	ParamFeature  = "feature"
	ParamLevel    = "level"
	ParamVersion  = "version"
	ParamPath     = "path"
	ParamOp       = "op"
	ParamOnce     = "once"
)

// Values of Params.Service: the side-effect service a service fault acts on, named as the
// store the sinks write to.
const (
	ServicePostgres = string(sink.Postgres)
	ServiceLedger   = string(sink.Ledger)
)

// store is the store a service fault acts on (default PostgreSQL).
func (p Params) store() sink.Store {
	if p.Service == ServiceLedger {
		return sink.Ledger
	}
	return sink.Postgres
}

// serviceOf names the service that holds the store of sink mode m.
func serviceOf(m sink.Mode) string {
	in, _ := m.Info()
	return string(in.Store)
}

// Values of Params.Links and Params.Cut.
const (
	LinksClient  = "client"
	LinksFetch   = "fetch"
	LinksNode    = "node"
	CutBlackhole = "blackhole"
	CutRefuse    = "refuse"
)

// Target needs (FaultSpec.Target).
const (
	// TargetNone: the fault takes no target (it picks its own nodes or hits every one).
	TargetNone = "none"
	// TargetRequired: the fault needs a target.
	TargetRequired = "required"
	// TargetOptional: a target narrows the fault; without one it picks nodes itself.
	TargetOptional = "optional"
)

// FaultSpec is one fault of the catalogue, its only definition: what it does, what it may aim
// at, which params it takes, how it becomes the nemesis's fault value, and how the matrix's
// fault axis aims it. Validation, `verity list`, the matrix and the runner all read these rows;
// a new fault is one row.
type FaultSpec struct {
	Name FaultName
	Kind string
	// Doc says what the fault does to the cluster and what the history records.
	Doc string
	// Target is TargetNone, TargetRequired or TargetOptional; Roles lists the roles accepted.
	Target string
	Roles  []Role
	// Params lists the params the fault accepts (Param* names); Required those it needs.
	Params   []string
	Required []string
	// Heals is true when the fault lasts a step's duration and is then healed; false when it
	// ends by itself (a disk loss restarts the node empty; a rolling bounce restarts each
	// node in turn), so that a timeline step gives it no duration.
	Heals bool
	// MinNodes is the fewest brokers the fault can act on (0: any).
	MinNodes int
	// LazyFS is true when the nodes must run on the lazy filesystem: a scenario that
	// schedules the fault runs with topology.power_loss.
	LazyFS bool
	// Build makes the nemesis's fault from f, a validated use of this row; refs fill what a
	// target may leave implicit.
	Build func(f Fault, refs Refs) (nemesis.Fault, error)
	// Preset aims the fault the way a matrix's fault axis means it, at the leader of topic's
	// partition 0 where it takes a target, with strengths that show within a short run; nil
	// when the fault has no such form (a compound needs a scenario file).
	Preset func(topic string) Fault
}

// TargetText says which targets the fault takes, for listings: "none", or whether one is
// required and the roles it may name ("any role" when every node role).
func (s FaultSpec) TargetText() string {
	if s.Target == TargetNone || len(s.Roles) == 0 {
		return "none"
	}
	roles := make([]string, len(s.Roles))
	for i, r := range s.Roles {
		roles[i] = string(r)
	}
	names := strings.Join(roles, "|")
	if slices.Equal(s.Roles, nodeRoles()) {
		names = "any role"
	}
	if s.Target == TargetOptional {
		return "optional: " + names
	}
	return names
}

// ParamsText lists the params the fault takes, the required ones marked with '*'; "-" for none.
func (s FaultSpec) ParamsText() string {
	if len(s.Params) == 0 {
		return "-"
	}
	ps := make([]string, len(s.Params))
	for i, p := range s.Params {
		ps[i] = p
		if slices.Contains(s.Required, p) {
			ps[i] += "*"
		}
	}
	return strings.Join(ps, ",")
}

// Refs are what a scenario's targets may leave implicit: the transactional.id of
// txn-coordinator and the consumer group of group-coordinator (the run's first ones).
type Refs struct {
	TxnID, Group string
	// ShareGroup and ShareTopic name the run's share group and its first topic, for
	// share-coordinator.
	ShareGroup, ShareTopic string
	// LogDirs is the nodes' log directories (topology.log_dirs), which disk areas follow.
	LogDirs int
}

// nodeRoles are every role; partition roles are the ones a fetch-link fault can use.
func nodeRoles() []Role {
	return []Role{RoleLeaderOf, RoleFollowerOf, RoleFollowersOf, RoleReplicasOf, RoleController, RoleControllers, RoleTxnCoordinator,
		RoleGroupCoordinator, RoleShareCoordinator, RoleRandomMinority, RoleRandomMajority, RoleNode}
}

func partitionRoles() []Role {
	return []Role{RoleLeaderOf, RoleFollowerOf, RoleFollowersOf, RoleReplicasOf}
}

// FaultSpecs is the fault catalogue, in the order of the nemesis issue. Each call builds a
// fresh copy.
func FaultSpecs() []FaultSpec {
	toxicParams := func(p ...string) []string { return append([]string{ParamLinks}, p...) }
	return []FaultSpec{
		{Name: FaultKill, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(), Heals: true,
			Doc:   "SIGKILL the target nodes (a crash: nothing flushed); healed by starting them with their data",
			Build: targeted(func(t nemesis.Target, _ Params) nemesis.Fault { return nemesis.Kill{Target: t} }), Preset: preset(nil)},
		{Name: FaultStop, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(), Heals: true,
			Doc:   "SIGTERM the target nodes (a clean shutdown: leadership moves away first); healed by starting them",
			Build: targeted(func(t nemesis.Target, _ Params) nemesis.Fault { return nemesis.Stop{Target: t} }), Preset: preset(nil)},
		{Name: FaultPause, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(), Heals: true,
			Doc:   "freeze the target nodes (connections stay open, nothing answers, like a long GC pause); healed by resuming them",
			Build: targeted(func(t nemesis.Target, _ Params) nemesis.Fault { return nemesis.Pause{Target: t} }), Preset: preset(nil)},
		{Name: FaultRollingBounce, Kind: KindProcess, Target: TargetNone, Params: []string{ParamGate}, MinNodes: 2,
			Doc:   "SIGTERM and restart every broker in turn, the next once the cluster is healthy again (Kafka's replication_test clean bounce); ends by itself",
			Build: untargeted(func(p Params) nemesis.Fault { return nemesis.RollingBounce{Gate: p.Gate.Std()} }), Preset: preset(nil)},
		{Name: FaultRollingBounceHard, Kind: KindProcess, Target: TargetNone, Params: []string{ParamGate}, MinNodes: 2,
			Doc:   "SIGKILL and restart every broker in turn, the next once the cluster is healthy again (hard bounce); ends by itself",
			Build: untargeted(func(p Params) nemesis.Fault { return nemesis.RollingBounce{Hard: true, Gate: p.Gate.Std()} }), Preset: preset(nil)},
		{Name: FaultRollingUpgrade, Kind: KindProcess, Target: TargetNone, Params: []string{ParamVersion, ParamGate}, Required: []string{ParamVersion}, MinNodes: 2,
			Doc: "move every node to Kafka release `version` (newer than the scenario's) one at a time: a clean stop, the release's image " +
				"on the node's data, the next once the cluster is healthy; brokers first, then dedicated controllers; then metadata.version " +
				"raised to the new release's; ends by itself",
			Build:  untargeted(func(p Params) nemesis.Fault { return nemesis.RollingUpgrade{To: p.Version, Gate: p.Gate.Std()} }),
			Preset: preset(func(p *Params) { p.Version = kafkaconf.Releases()[len(kafkaconf.Releases())-1].Version })},
		{Name: FaultDiskLoss, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(), MinNodes: 2,
			Doc:   "kill the target nodes, wipe their data directories and start them empty: they refill from the leaders; ends by itself",
			Build: targeted(func(t nemesis.Target, _ Params) nemesis.Fault { return nemesis.DiskLoss{Target: t} }), Preset: preset(nil)},
		{Name: FaultPowerLoss, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(), Heals: true, LazyFS: true,
			Doc:   "cut the target nodes' power: SIGKILL, and every write no fsync made durable is lost (the nodes run on the lazy filesystem); healed by starting them",
			Build: targeted(func(t nemesis.Target, _ Params) nemesis.Fault { return nemesis.PowerLoss{Target: t} }), Preset: preset(nil)},
		{Name: FaultDiskError, Kind: KindDisk, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamPath, ParamOp, ParamOnce},
			Heals: true, LazyFS: true,
			Doc: "fail the target nodes' disk calls with EIO: `op` (write, the default; fsync; read) on the files of `path` (all, the default; " +
				"metadata; checkpoints; log: the target partition's; or a pattern), every one or, with `once`, the first; nothing is written " +
				"or made durable by a failed call (the nodes run on the lazy filesystem); healed by clearing it, the heal recording each node's hits",
			Build: diskFault, Preset: preset(func(p *Params) { p.Path = DiskLog })},
		{Name: FaultDiskFull, Kind: KindDisk, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamPath, ParamBytes},
			Heals: true, LazyFS: true,
			Doc: "a full disk: ENOSPC on the target nodes' writes and file creations under `path` once `bytes` more have been written " +
				"there (0: at once), and no free space reported; healed by clearing it, the heal recording each node's hits",
			Build: diskFault, Preset: preset(func(p *Params) { p.Path = DiskLog })},
		{Name: FaultSlowDisk, Kind: KindDisk, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamPath, ParamOp, ParamDelay},
			Required: []string{ParamDelay}, Heals: true, LazyFS: true,
			Doc: "delay each `op` (fsync, the default; write; read) of the target nodes on the files of `path` by `delay`; " +
				"healed by clearing it, the heal recording each node's delayed calls",
			Build: diskFault, Preset: preset(func(p *Params) { p.Delay = Duration(time.Second) })},
		{Name: FaultIsolate, Kind: KindNetwork, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamCut}, Heals: true,
			Doc:   "cut every link between the target nodes and the other nodes; clients still reach them",
			Build: targeted(func(t nemesis.Target, p Params) nemesis.Fault { return nemesis.Isolate{Target: t, Cut: p.cutKind()} }), Preset: preset(nil)},
		{Name: FaultSplitMajority, Kind: KindNetwork, Target: TargetNone, Params: []string{ParamCut}, Heals: true, MinNodes: 3,
			Doc:   "split the cluster into a random minority and a majority (drawn from the seed) that cannot reach each other",
			Build: untargeted(func(p Params) nemesis.Fault { return nemesis.Split{Cut: p.cutKind()} }), Preset: preset(nil)},
		{Name: FaultBridge, Kind: KindNetwork, Target: TargetNone, Params: []string{ParamCut}, Heals: true, MinNodes: 3,
			Doc:   "two halves that cannot reach each other but both reach one middle node (drawn from the seed)",
			Build: untargeted(func(p Params) nemesis.Fault { return nemesis.Bridge{Cut: p.cutKind()} }), Preset: preset(nil)},
		{Name: FaultLeaderCut, Kind: KindNetwork, Target: TargetRequired, Roles: []Role{RoleLeaderOf}, Params: []string{ParamCut}, Heals: true,
			Doc: "cut a partition's leader off from its followers while clients still reach it",
			Build: func(f Fault, _ Refs) (nemesis.Fault, error) {
				return nemesis.LeaderCut{Topic: f.Target.Topic, Partition: f.Target.Partition, Cut: f.Params.cutKind()}, nil
			}, Preset: preset(nil)},
		{Name: FaultOneWayCut, Kind: KindNetwork, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamTo, ParamCut},
			Required: []string{ParamTo}, Heals: true,
			Doc: "drop the traffic from the target nodes to params.to, the other direction untouched",
			Build: func(f Fault, refs Refs) (nemesis.Fault, error) {
				from, err := f.Target.build(refs)
				if err != nil {
					return nil, err
				}
				to, err := f.Params.To.build(refs)
				if err != nil {
					return nil, fmt.Errorf("params.to: %w", err)
				}
				return nemesis.OneWayCut{From: from, To: to, Cut: f.Params.cutKind()}, nil
			},
			// A follower's fetches from the leader: the cut that makes the follower fall out of
			// the ISR while the leader stays.
			Preset: func(topic string) Fault {
				return Fault{Name: FaultOneWayCut, Target: &Target{Role: RoleFollowerOf, Topic: topic},
					Params: Params{To: &Target{Role: RoleLeaderOf, Topic: topic}}}
			}},
		{Name: FaultClientCut, Kind: KindNetwork, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamCut}, Heals: true,
			Doc:   "cut the clients off from the target nodes; the nodes still reach each other",
			Build: targeted(func(t nemesis.Target, p Params) nemesis.Fault { return nemesis.ClientCut{Target: t, Cut: p.cutKind()} }), Preset: preset(nil)},
		{Name: FaultLatency, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamDelay, ParamJitter),
			Required: []string{ParamDelay}, Heals: true,
			Doc: "delay the responses on the target's links by delay ± jitter",
			Build: toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault {
				return nemesis.Latency(ls, p.Delay.Std(), p.Jitter.Std())
			}),
			Preset: preset(func(p *Params) { p.Delay, p.Jitter = Duration(300*time.Millisecond), Duration(50*time.Millisecond) })},
		{Name: FaultBandwidth, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamRateKBps),
			Required: []string{ParamRateKBps}, Heals: true,
			Doc:    "cap both directions of the target's links at rate_kbps",
			Build:  toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault { return nemesis.Bandwidth(ls, p.RateKBps) }),
			Preset: preset(func(p *Params) { p.RateKBps = 64 })},
		{Name: FaultBlackholeTimeout, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamAfter), Heals: true,
			Doc:    "stop all data both ways on the target's links and close the connections after `after` (0: hold them until healed)",
			Build:  toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault { return nemesis.Timeout(ls, p.After.Std()) }),
			Preset: preset(nil)},
		{Name: FaultResetPeer, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamAfter), Heals: true,
			Doc:    "reset (TCP RST) the connections on the target's links after `after`, new ones included, while the fault lasts",
			Build:  toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault { return nemesis.ResetPeer(ls, p.After.Std()) }),
			Preset: preset(nil)},
		{Name: FaultSlowClose, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamDelay),
			Required: []string{ParamDelay}, Heals: true,
			Doc:    "delay the close of connections on the target's links by delay",
			Build:  toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault { return nemesis.SlowClose(ls, p.Delay.Std()) }),
			Preset: preset(func(p *Params) { p.Delay = Duration(2 * time.Second) })},
		{Name: FaultLimitData, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamBytes), Heals: true,
			Doc:    "close each connection on the target's links once `bytes` of responses came back through it (0: at their first byte)",
			Build:  toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault { return nemesis.LimitData(ls, p.Bytes) }),
			Preset: preset(func(p *Params) { p.Bytes = 64 << 10 })},
		{Name: FaultDropRequest, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamAPI, ParamNth),
			Required: []string{ParamAPI}, Heals: true,
			Doc: "drop the nth request (from 1, per proxy; 0: every one) of Kafka API `api` (Produce, EndTxn, …) on its way to the target over the target's links: its sender waits for an answer that never comes (needs Verity's Toxiproxy image)",
			Build: toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault {
				return nemesis.DropRequest(ls, p.request(), p.Nth)
			}),
			Preset: preset(func(p *Params) { p.API, p.Nth = "Produce", 1 })},
		{Name: FaultHoldRequest, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamAPI, ParamNth, ParamDelay, ParamUntil),
			Required: []string{ParamAPI}, Heals: true,
			Doc: "hold the nth request of Kafka API `api`, and what follows it on its connection, for delay (0: until healed), or, with `until`, until a request `until` names crosses another connection (which then waits delay); then it reaches the target even if its sender gave up (needs Verity's Toxiproxy image)",
			Build: toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault {
				return nemesis.HoldRequest(ls, p.request(), p.Nth, p.Delay.Std(), p.until())
			}),
			Preset: preset(func(p *Params) { p.API, p.Nth = "EndTxn", 1 })},
		{Name: FaultDropResponse, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamAPI, ParamNth),
			Required: []string{ParamAPI}, Heals: true,
			Doc: "let the nth request of Kafka API `api` reach the target over the target's links and close its connection right behind it: the target carries it out and its sender never learns the outcome (needs Verity's Toxiproxy image)",
			Build: toxic(func(ls nemesis.LinkSet, p Params) nemesis.Fault {
				return nemesis.DropResponse(ls, p.request(), p.Nth)
			}),
			Preset: preset(func(p *Params) { p.API, p.Nth = "EndTxn", 1 })},
		{Name: FaultSetFeature, Kind: KindFeature, Target: TargetNone, Params: []string{ParamFeature, ParamLevel},
			Required: []string{ParamFeature, ParamLevel},
			Doc: "bring the cluster's `feature` (transaction.version, eligible.leader.replicas.version) to `level` during the run " +
				"(UpdateFeatures: an upgrade, or a downgrade that loses no metadata); ends by itself",
			Build:  untargeted(func(p Params) nemesis.Fault { return nemesis.SetFeature{Feature: p.Feature, Level: *p.Level} }),
			Preset: preset(func(p *Params) { p.Feature, p.Level = kafkaconf.FeatureTransaction, new(int16(1)) })},
		{Name: FaultStrayTxnProduce, Kind: KindClient, Target: TargetRequired, Roles: []Role{RoleLeaderOf},
			Doc: "write one transactional record to the target partition without adding the partition to a transaction first " +
				"(a Produce v11 from a client that skipped AddPartitionsToTxn): refused with transaction.partition.verification.enable " +
				"(KIP-890 part 1), else appended with no marker ever to end it; ends by itself",
			Build: func(f Fault, _ Refs) (nemesis.Fault, error) {
				return nemesis.StrayTxnProduce{Topic: f.Target.Topic, Partition: f.Target.Partition}, nil
			}, Preset: preset(nil)},
		{Name: FaultAckLoss, Kind: KindAckLoss, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamHold}, Heals: true,
			Doc:    "lose the target's answers to the clients while requests still arrive: records are appended but the producer sees an unknown outcome (seed 000 §0)",
			Build:  targeted(func(t nemesis.Target, p Params) nemesis.Fault { return nemesis.AckLoss{Target: t, Hold: p.Hold} }),
			Preset: preset(nil)},
		{Name: FaultCompound, Kind: KindCompound, Target: TargetNone, Heals: true,
			Doc: "the faults in parts at once: injected in order (each resolves its target after the ones before took effect), healed in reverse",
			Build: func(f Fault, refs Refs) (nemesis.Fault, error) {
				var parts nemesis.Compound
				for i, part := range f.Parts {
					np, err := part.Build(refs)
					if err != nil {
						return nil, fmt.Errorf("parts[%d]: %w", i, err)
					}
					parts = append(parts, np)
				}
				return parts, nil
			}},
		{Name: FaultSinkCut, Kind: KindService, Target: TargetNone, Params: []string{ParamService, ParamCut}, Heals: true,
			Doc: "cut the sinks off from their store (service postgres, the default, or ledger); Kafka is untouched",
			Build: untargeted(func(p Params) nemesis.Fault {
				return nemesis.ServiceCut{Service: p.serviceEndpoint(), Cut: p.cutKind()}
			})},
		{Name: FaultServiceKill, Kind: KindService, Target: TargetNone, Params: []string{ParamService}, Heals: true,
			Doc:   "SIGKILL the sinks' store (service postgres, the default: a database crash and recovery; ledger: its memory is lost); healed by starting it",
			Build: untargeted(func(p Params) nemesis.Fault { return nemesis.ServiceKill{Service: p.serviceEndpoint()} })},
		{Name: FaultNone, Kind: KindNone, Target: TargetNone,
			Doc:    "no fault: a control run, or a quiet slot in a periodic set",
			Build:  untargeted(func(Params) nemesis.Fault { return nemesis.None{} }),
			Preset: preset(nil)},
	}
}

// LookupFault returns the spec of the fault called name.
func LookupFault(name FaultName) (FaultSpec, bool) {
	for _, s := range FaultSpecs() {
		if s.Name == name {
			return s, true
		}
	}
	return FaultSpec{}, false
}

// Build makes the nemesis's fault from f, which must have passed validation.
func (f Fault) Build(refs Refs) (nemesis.Fault, error) {
	spec, ok := LookupFault(f.Name)
	if !ok {
		return nil, fmt.Errorf("fault %q is not in the catalogue", f.Name)
	}
	nf, err := spec.Build(f, refs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return nf, nil
}

// Preset is the fault called name as the matrix's fault axis aims it (FaultSpec.Preset).
func Preset(name FaultName, topic string) (Fault, error) {
	spec, ok := LookupFault(name)
	if !ok || spec.Preset == nil {
		return Fault{}, fmt.Errorf("fault %q%s: want one of %s (compound faults need a scenario file)", name,
			suggest(string(name), PresetNames()), strings.Join(PresetNames(), ", "))
	}
	f := spec.Preset(topic)
	f.Name = spec.Name
	if f.Target == nil && spec.Target == TargetRequired {
		f.Target = &Target{Role: RoleLeaderOf, Topic: topic}
	}
	return f, nil
}

// PresetNames lists the faults a matrix's fault axis may name.
func PresetNames() []string {
	var out []string
	for _, s := range FaultSpecs() {
		if s.Preset != nil {
			out = append(out, string(s.Name))
		}
	}
	return out
}

// preset is the usual preset: params set by tune, and (filled in by Preset) the leader of the
// topic's partition 0 as the target of a fault that needs one.
func preset(tune func(*Params)) func(topic string) Fault {
	return func(string) Fault {
		var f Fault
		if tune != nil {
			tune(&f.Params)
		}
		return f
	}
}

// targeted builds a fault that acts on its target's nodes.
func targeted(make func(nemesis.Target, Params) nemesis.Fault) func(Fault, Refs) (nemesis.Fault, error) {
	return func(f Fault, refs Refs) (nemesis.Fault, error) {
		t, err := f.Target.build(refs)
		if err != nil {
			return nil, err
		}
		return make(t, f.Params), nil
	}
}

// untargeted builds a fault that picks its own nodes.
func untargeted(make func(Params) nemesis.Fault) func(Fault, Refs) (nemesis.Fault, error) {
	return func(f Fault, _ Refs) (nemesis.Fault, error) { return make(f.Params), nil }
}

// toxic builds a toxic on the links params.links names: the clients' links to the target
// (default), every inter-node link of the target, or the fetch links of its partition.
func toxic(make func(nemesis.LinkSet, Params) nemesis.Fault) func(Fault, Refs) (nemesis.Fault, error) {
	return func(f Fault, refs Refs) (nemesis.Fault, error) {
		if f.Params.Links == LinksFetch {
			return make(nemesis.FetchLinksOf(f.Target.Topic, f.Target.Partition), f.Params), nil
		}
		t, err := f.Target.build(refs)
		if err != nil {
			return nil, err
		}
		if f.Params.Links == LinksNode {
			return make(nemesis.NodeLinksOf(t), f.Params), nil
		}
		return make(nemesis.ClientLinksTo(t), f.Params), nil
	}
}

// request is the Kafka request p.API names (validated).
func (p Params) request() kafkatoxic.Request {
	r, _ := kafkatoxic.ParseRequest(p.API)
	return r
}

// until is the request p.Until names (validated); nil without one.
func (p Params) until() *kafkatoxic.Request {
	if p.Until == "" {
		return nil
	}
	r, _ := kafkatoxic.ParseRequest(p.Until)
	return &r
}

// serviceEndpoint is the harness endpoint of the service p names (default PostgreSQL).
func (p Params) serviceEndpoint() int {
	if p.store() == sink.Ledger {
		return harness.LedgerEndpoint
	}
	return harness.PostgresEndpoint
}

func (p Params) cutKind() harness.CutKind {
	if p.Cut == CutRefuse {
		return harness.CutRefuse
	}
	return harness.CutBlackhole
}

// FaultNames lists the catalogue's names in order.
func FaultNames() []FaultName {
	specs := FaultSpecs()
	out := make([]FaultName, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// RoleSpec is one target role: what it picks, the Target fields it reads, and the nemesis
// target it becomes.
type RoleSpec struct {
	Role Role
	Doc  string
	// Uses names the Target fields the role reads.
	Uses  []string
	Build func(t Target, refs Refs) (nemesis.Target, error)
}

// RoleSpecs lists the target roles. Each call builds a fresh copy.
func RoleSpecs() []RoleSpec {
	fixed := func(nt nemesis.Target) func(Target, Refs) (nemesis.Target, error) {
		return func(Target, Refs) (nemesis.Target, error) { return nt, nil }
	}
	return []RoleSpec{
		{RoleLeaderOf, "the current leader of a partition", []string{"topic", "partition"},
			func(t Target, _ Refs) (nemesis.Target, error) { return nemesis.LeaderOf(t.Topic, t.Partition), nil }},
		{RoleFollowerOf, "one follower of a partition (from the seeded source, preferring followers in the ISR)", []string{"topic", "partition"},
			func(t Target, _ Refs) (nemesis.Target, error) { return nemesis.FollowerOf(t.Topic, t.Partition), nil }},
		{RoleFollowersOf, "every follower of a partition (its replicas but the leader)", []string{"topic", "partition"},
			func(t Target, _ Refs) (nemesis.Target, error) { return nemesis.FollowersOf(t.Topic, t.Partition), nil }},
		{RoleReplicasOf, "every replica of a partition, its leader and followers", []string{"topic", "partition"},
			func(t Target, _ Refs) (nemesis.Target, error) { return nemesis.ReplicasOf(t.Topic, t.Partition), nil }},
		{RoleController, "the active KRaft controller (the quorum leader)", nil, fixed(nemesis.ActiveController())},
		{RoleControllers, "every KRaft controller (the whole quorum: every broker of a combined cluster, or 101-103)", nil, fixed(nemesis.Controllers())},
		{RoleTxnCoordinator, "the transaction coordinator of a transactional.id (the leader of its __transaction_state partition)", []string{"txn_id"},
			func(t Target, refs Refs) (nemesis.Target, error) {
				id := cmp.Or(t.TxnID, refs.TxnID)
				if id == "" {
					return nil, errors.New("target txn-coordinator: the run has no transactional producer or processor; name a txn_id")
				}
				return nemesis.TxnCoordinator(id), nil
			}},
		{RoleGroupCoordinator, "the group coordinator of a consumer group (the leader of its __consumer_offsets partition)", []string{"group"},
			func(t Target, refs Refs) (nemesis.Target, error) {
				g := cmp.Or(t.Group, refs.Group)
				if g == "" {
					return nil, errors.New("target group-coordinator: the run has no consumer group; name a group")
				}
				return nemesis.GroupCoordinator(g), nil
			}},
		{RoleShareCoordinator, "the share coordinator of the run's share group for a partition (the leader of the __share_group_state partition that holds its state)", []string{"topic", "partition"},
			func(t Target, refs Refs) (nemesis.Target, error) {
				if refs.ShareGroup == "" {
					return nil, errors.New("target share-coordinator: the run has no share group")
				}
				return nemesis.ShareCoordinator(refs.ShareGroup, cmp.Or(t.Topic, refs.ShareTopic), t.Partition), nil
			}},
		{RoleRandomMinority, "a random minority of the brokers (from the seeded source)", nil, fixed(nemesis.RandomMinority())},
		{RoleRandomMajority, "a random majority of the brokers (from the seeded source)", nil, fixed(nemesis.RandomMajority())},
		{RoleNode, "the node with a fixed id: a broker 1..nodes, or a dedicated controller 101-103", []string{"node"},
			func(t Target, _ Refs) (nemesis.Target, error) { return nemesis.Node(t.Node), nil }},
	}
}

// build makes the nemesis's target from t (nil: the fault needs one).
func (t *Target) build(refs Refs) (nemesis.Target, error) {
	if t == nil {
		return nil, errors.New("the fault needs a target")
	}
	for _, r := range RoleSpecs() {
		if r.Role == t.Role {
			return r.Build(*t, refs)
		}
	}
	return nil, fmt.Errorf("target role %q is unknown", t.Role)
}

// Roles lists the role names in order.
func Roles() []Role {
	specs := RoleSpecs()
	out := make([]Role, len(specs))
	for i, s := range specs {
		out[i] = s.Role
	}
	return out
}
