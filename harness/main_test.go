package harness_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/verity-kafka/verity/harness"
)

// TestMain removes what killed earlier runs left, runs the tests, then fails the package if
// anything labelled io.verity.run is still there: every test must clean up after itself.
// Packages that start clusters run one at a time (go test -p 1, as make test does), so any
// label found belongs to this package's runs.
func TestMain(m *testing.M) {
	code := m.Run()
	if !testing.Short() && harness.Ping(context.Background()) == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		left, err := harness.Leftovers(ctx, "")
		cancel()
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "checking for leftovers: %v\n", err)
			code = 1
		case left != (harness.Removed{}):
			fmt.Fprintf(os.Stderr, "FAIL: leftovers labelled %s after the tests: %+v (run `make clean`)\n", harness.Label, left)
			code = 1
		default:
			fmt.Fprintf(os.Stderr, "no container, network or volume labelled %s is left\n", harness.Label)
		}
	}
	os.Exit(code)
}
