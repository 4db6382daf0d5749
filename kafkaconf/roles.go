package kafkaconf

// RoleName names a workload role: a kind of client process a run starts.
type RoleName string

// The workload roles.
const (
	RoleProducer      RoleName = "producer"       // plain sends, acks and idempotence as set
	RoleTxnProducer   RoleName = "txn-producer"   // sends in transactions
	RoleProcessor     RoleName = "processor"      // read-process-write: consume, produce and commit offsets in one transaction
	RoleConsumer      RoleName = "consumer"       // reads assigned partitions
	RoleGroupConsumer RoleName = "group-consumer" // reads as a member of a consumer group
	RoleSink          RoleName = "sink"           // a group member with side effects outside Kafka
	RoleShareMember   RoleName = "share-member"   // a member of a share group (KIP-932)
)

// Role is what a workload role asks of Kafka. It is the one place that says which roles use
// transactions or a consumer group: validation, compilation and the run ask it.
type Role struct {
	Name RoleName
	// Transactional: it writes in transactions (a transactional.id, a transaction coordinator).
	Transactional bool
	// Group: it is a member of a consumer group (a group coordinator).
	Group bool
	// Share: it is a member of a share group (a share coordinator, a client with a share
	// consumer).
	Share bool
}

// Roles lists every workload role.
func Roles() []Role {
	return []Role{
		{Name: RoleProducer},
		{Name: RoleTxnProducer, Transactional: true},
		{Name: RoleProcessor, Transactional: true, Group: true},
		{Name: RoleConsumer},
		{Name: RoleGroupConsumer, Group: true},
		{Name: RoleSink, Group: true},
		{Name: RoleShareMember, Share: true},
	}
}

// Uses is what a mix of roles asks of the cluster.
type Uses struct {
	// Transactions: some role writes in transactions.
	Transactions bool
	// Groups: some role is a member of a consumer group.
	Groups bool
	// ShareGroups: some role is a member of a share group.
	ShareGroups bool
}

// UsesOf is what a workload with count instances of each role asks of the cluster.
func UsesOf(count map[RoleName]int) Uses {
	var u Uses
	for _, r := range Roles() {
		if count[r.Name] <= 0 {
			continue
		}
		u.Transactions = u.Transactions || r.Transactional
		u.Groups = u.Groups || r.Group
		u.ShareGroups = u.ShareGroups || r.Share
	}
	return u
}
