package nemesis_test

import (
	"flag"
	"os"
	"testing"

	"github.com/verity-kafka/verity/harness/harnesstest"
)

// fullFigures makes TestFaultsOnCluster repeat each fault enough times for its latency
// percentiles: go test ./nemesis -run TestFaultsOnCluster -v -figures.
var fullFigures = flag.Bool("figures", false, "repeat each fault enough times for the latency figures")

// TestMain fails the package if any container, network or volume of a cluster is left behind.
func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }
