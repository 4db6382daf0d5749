package workloads

import (
	"flag"
	"os"
	"testing"

	"github.com/verity-kafka/verity/harness/harnesstest"
)

// fullFigures makes the recording overhead rounds long and many enough for its ratios: go test
// ./workloads -run 'TestOnCluster/recording' -v -figures. Without it a few short rounds check
// that recording works and every send is acknowledged.
var fullFigures = flag.Bool("figures", false, "run enough recording-overhead rounds for the figures")

// TestMain fails the package if any container, network or volume of a cluster is left behind.
func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }
