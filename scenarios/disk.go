package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/verity-kafka/verity/lazyfs/control"
	"github.com/verity-kafka/verity/nemesis"
)

// Disk areas: what a disk fault's params.path may name instead of a pattern. Patterns are
// relative to a node's data directory. With one log directory (topology.log_dirs) its top
// holds one directory per partition and the checkpoint files; with several it holds one
// directory per log directory (dir0, dir1, …) and metadata, each with its own checkpoints
// (harness.LogDirPaths), and the areas follow.
const (
	// DiskAll is every file.
	DiskAll = "all"
	// DiskMetadata is the KRaft metadata log, __cluster_metadata-0.
	DiskMetadata = "metadata"
	// DiskCheckpoints are the checkpoint files at the top of the data directory
	// (replication-offset-checkpoint, recovery-point-offset-checkpoint,
	// log-start-offset-checkpoint, bootstrap.checkpoint, …).
	DiskCheckpoints = "checkpoints"
	// DiskLog is the target partition's log directory (a partition role: leader-of, …).
	DiskLog = "log"
)

// diskAreas is every disk area, for messages.
func diskAreas() []string { return []string{DiskAll, DiskMetadata, DiskCheckpoints, DiskLog} }

// diskPattern is the pattern params.path stands for on target t with logDirs log directories
// ("" for log without a target, which validation refuses).
func diskPattern(path string, t *Target, logDirs int) string {
	// Under several log directories every area is one level down: a partition's directory is
	// in one of them (the broker chose which), the metadata log in metadata.
	top := ""
	if logDirs > 1 {
		top = "*/"
	}
	switch path {
	case "", DiskAll:
		return "**"
	case DiskMetadata:
		return top + "__cluster_metadata-0/**"
	case DiskCheckpoints:
		return top + "*checkpoint*"
	case DiskLog:
		if t == nil {
			return ""
		}
		return fmt.Sprintf("%s%s-%d/**", top, t.Topic, t.Partition)
	}
	return path
}

// diskOp is the call a disk fault acts on: params.op, else the fault's default.
func diskOp(name FaultName, op string) control.FaultOp {
	switch {
	case op != "":
		return control.FaultOp(op)
	case name == FaultSlowDisk:
		return control.OpFsync
	case name == FaultDiskFull:
		return ""
	}
	return control.OpWrite
}

// diskRules are the lazy filesystem's rules for disk fault f on nodes with logDirs log
// directories.
func diskRules(f Fault, logDirs int) control.Faults {
	r := control.DiskFault{Path: diskPattern(f.Params.Path, f.Target, logDirs), Op: diskOp(f.Name, f.Params.Op)}
	switch f.Name {
	case FaultDiskError:
		r.Kind, r.Once = control.KindError, f.Params.Once
	case FaultDiskFull:
		r.Kind, r.AfterBytes = control.KindFull, f.Params.Bytes
	case FaultSlowDisk:
		r.Kind, r.Delay = control.KindSlow, f.Params.Delay.Std().String()
	}
	return control.Faults{Rules: []control.DiskFault{r}}
}

// diskFault builds a disk fault on its target's nodes.
func diskFault(f Fault, refs Refs) (nemesis.Fault, error) {
	t, err := f.Target.build(refs)
	if err != nil {
		return nil, err
	}
	return nemesis.DiskFault{Fault: string(f.Name), Target: t, Rules: diskRules(f, refs.LogDirs)}, nil
}

// checkDisk checks a disk fault's params: the area or pattern of path, the call of op, the
// room of bytes.
func (c *checker) checkDisk(path string, f Fault) {
	p := f.Params
	switch {
	case p.Path == DiskLog && (f.Target == nil || !slices.Contains(partitionRoles(), f.Target.Role)):
		c.addf(path+".path", "log: the log is a partition's, so the target's role must be one of %s", strings.Join(roleNames(partitionRoles()), ", "))
	case p.Path != "":
		if _, err := control.CompilePath(diskPattern(p.Path, f.Target, 1)); err != nil {
			c.addf(path+".path", "%v: want %s, or a pattern relative to the data directory such as verity-0/*.log", err, strings.Join(diskAreas(), ", "))
		}
	}
	if p.Op != "" && !slices.Contains(control.FaultOps, control.FaultOp(p.Op)) {
		c.addf(path+".op", "%q: want one of %v", p.Op, control.FaultOps)
	}
	if p.Bytes < 0 {
		c.addf(path+".bytes", "%d: want 0 (full at once) or more", p.Bytes)
	}
	if p.Delay < 0 {
		c.addf(path+".delay", "%s: want a positive duration", p.Delay)
	}
}
