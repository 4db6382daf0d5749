package nemesis_test

import (
	"os"
	"testing"

	"github.com/verity-kafka/verity/harness/harnesstest"
)

// TestMain fails the package if any container, network or volume of a cluster is left behind.
func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }
