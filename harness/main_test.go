package harness_test

import (
	"os"
	"testing"

	"github.com/verity-kafka/verity/harness/harnesstest"
)

// TestMain fails the package if anything labelled io.verity.run is left after its tests (the
// suite's check that every test cleans up after itself).
func TestMain(m *testing.M) { os.Exit(harnesstest.Main(m)) }
