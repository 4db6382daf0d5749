package scenarios

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
	FaultAckLoss           FaultName = "ack-loss"
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
	RoleController       Role = "controller"
	RoleTxnCoordinator   Role = "txn-coordinator"
	RoleGroupCoordinator Role = "group-coordinator"
	RoleRandomMinority   Role = "random-minority"
	RoleRandomMajority   Role = "random-majority"
	RoleNode             Role = "node"
)

// Fault kinds (FaultSpec.Kind).
const (
	KindProcess  = "process"
	KindNetwork  = "network"
	KindToxic    = "toxic"
	KindAckLoss  = "ack-loss"
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
)

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

// FaultSpec describes one fault of the catalogue: what it does, what it may aim at and which
// params it takes. It is data: the nemesis maps Name onto a fault value, validation reads the
// rest.
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
}

// nodeRoles are every role; partition roles are the ones a fetch-link fault can use.
func nodeRoles() []Role {
	return []Role{RoleLeaderOf, RoleFollowerOf, RoleFollowersOf, RoleController, RoleTxnCoordinator,
		RoleGroupCoordinator, RoleRandomMinority, RoleRandomMajority, RoleNode}
}

func partitionRoles() []Role { return []Role{RoleLeaderOf, RoleFollowerOf, RoleFollowersOf} }

// FaultSpecs is the fault catalogue, in the order of the nemesis issue. Each call builds a
// fresh copy.
func FaultSpecs() []FaultSpec {
	toxicParams := func(p ...string) []string { return append([]string{ParamLinks}, p...) }
	return []FaultSpec{
		{Name: FaultKill, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(), Heals: true,
			Doc: "SIGKILL the target nodes (a crash: nothing flushed); healed by starting them with their data"},
		{Name: FaultStop, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(), Heals: true,
			Doc: "SIGTERM the target nodes (a clean shutdown: leadership moves away first); healed by starting them"},
		{Name: FaultPause, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(), Heals: true,
			Doc: "freeze the target nodes (connections stay open, nothing answers, like a long GC pause); healed by resuming them"},
		{Name: FaultRollingBounce, Kind: KindProcess, Target: TargetNone, Params: []string{ParamGate},
			Doc: "SIGTERM and restart every broker in turn, the next once the cluster is healthy again (Kafka's replication_test clean bounce); ends by itself"},
		{Name: FaultRollingBounceHard, Kind: KindProcess, Target: TargetNone, Params: []string{ParamGate},
			Doc: "SIGKILL and restart every broker in turn, the next once the cluster is healthy again (hard bounce); ends by itself"},
		{Name: FaultDiskLoss, Kind: KindProcess, Target: TargetRequired, Roles: nodeRoles(),
			Doc: "kill the target nodes, wipe their data directories and start them empty: they refill from the leaders; ends by itself"},
		{Name: FaultIsolate, Kind: KindNetwork, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamCut}, Heals: true,
			Doc: "cut every link between the target nodes and the rest of the cluster and the clients"},
		{Name: FaultSplitMajority, Kind: KindNetwork, Target: TargetOptional, Roles: nodeRoles(), Params: []string{ParamCut}, Heals: true,
			Doc: "split the cluster into a minority and a majority that cannot reach each other (the target's nodes on the minority side; default a random minority)"},
		{Name: FaultBridge, Kind: KindNetwork, Target: TargetOptional, Roles: nodeRoles(), Params: []string{ParamCut}, Heals: true,
			Doc: "two halves that cannot reach each other but both reach one middle node (the target, default random)"},
		{Name: FaultLeaderCut, Kind: KindNetwork, Target: TargetRequired, Roles: []Role{RoleLeaderOf}, Params: []string{ParamCut}, Heals: true,
			Doc: "cut a partition's leader off from its followers while clients still reach it"},
		{Name: FaultOneWayCut, Kind: KindNetwork, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamTo, ParamCut},
			Required: []string{ParamTo}, Heals: true,
			Doc: "drop the traffic from the target nodes to params.to, the other direction untouched"},
		{Name: FaultClientCut, Kind: KindNetwork, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamCut}, Heals: true,
			Doc: "cut the clients off from the target nodes; the nodes still reach each other"},
		{Name: FaultLatency, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamDelay, ParamJitter),
			Required: []string{ParamDelay}, Heals: true,
			Doc: "delay the responses on the target's links by delay ± jitter"},
		{Name: FaultBandwidth, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamRateKBps),
			Required: []string{ParamRateKBps}, Heals: true,
			Doc: "cap both directions of the target's links at rate_kbps"},
		{Name: FaultBlackholeTimeout, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamAfter), Heals: true,
			Doc: "stop all data both ways on the target's links and close the connections after `after` (0: hold them until healed)"},
		{Name: FaultResetPeer, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamAfter), Heals: true,
			Doc: "reset (TCP RST) the connections on the target's links after `after`, new ones included, while the fault lasts"},
		{Name: FaultSlowClose, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamDelay),
			Required: []string{ParamDelay}, Heals: true,
			Doc: "delay the close of connections on the target's links by delay"},
		{Name: FaultLimitData, Kind: KindToxic, Target: TargetRequired, Roles: nodeRoles(), Params: toxicParams(ParamBytes), Heals: true,
			Doc: "close each connection on the target's links once `bytes` of responses came back through it (0: at their first byte)"},
		{Name: FaultAckLoss, Kind: KindAckLoss, Target: TargetRequired, Roles: nodeRoles(), Params: []string{ParamHold}, Heals: true,
			Doc: "lose the target's answers to the clients while requests still arrive: records are appended but the producer sees an unknown outcome (seed 000 §0)"},
		{Name: FaultCompound, Kind: KindCompound, Target: TargetNone, Heals: true,
			Doc: "the faults in parts at once: injected in order (each resolves its target after the ones before took effect), healed in reverse"},
		{Name: FaultNone, Kind: KindNone, Target: TargetNone,
			Doc: "no fault: a control run, or a quiet slot in a periodic set"},
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

// FaultNames lists the catalogue's names in order.
func FaultNames() []FaultName {
	specs := FaultSpecs()
	out := make([]FaultName, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// RoleSpec describes one target role.
type RoleSpec struct {
	Role Role
	Doc  string
	// Uses names the Target fields the role reads.
	Uses []string
}

// RoleSpecs lists the target roles. Each call builds a fresh copy.
func RoleSpecs() []RoleSpec {
	return []RoleSpec{
		{RoleLeaderOf, "the current leader of a partition", []string{"topic", "partition"}},
		{RoleFollowerOf, "one follower of a partition (from the seeded source, preferring followers in the ISR)", []string{"topic", "partition"}},
		{RoleFollowersOf, "every follower of a partition (its replicas but the leader)", []string{"topic", "partition"}},
		{RoleController, "the active KRaft controller (the quorum leader)", nil},
		{RoleTxnCoordinator, "the transaction coordinator of a transactional.id (the leader of its __transaction_state partition)", []string{"txn_id"}},
		{RoleGroupCoordinator, "the group coordinator of a consumer group (the leader of its __consumer_offsets partition)", []string{"group"}},
		{RoleRandomMinority, "a random minority of the brokers (from the seeded source)", nil},
		{RoleRandomMajority, "a random majority of the brokers (from the seeded source)", nil},
		{RoleNode, "the node with a fixed id: a broker 1..nodes, or a dedicated controller 101-103", []string{"node"}},
	}
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
