package workloads

import (
	"flag"
	"os"
	"testing"

	"github.com/verity-kafka/verity/harness/harnesstest"
)

// fullFigures runs the recording overhead rounds, a measurement kept out of CI: go test
// ./workloads -run 'TestOnCluster/recording' -v -figures.
var fullFigures = flag.Bool("figures", false, "run the recording-overhead rounds for the figures")

// TestMain fails the package if any container, network or volume of a cluster is left behind.
func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }
