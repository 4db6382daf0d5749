package workloads

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/verity-kafka/verity/harness/harnesstest"
	"github.com/verity-kafka/verity/kafkaconf"
)

// fullFigures runs the recording overhead rounds, a measurement kept out of CI: go test
// ./workloads -run 'TestOnCluster/recording' -v -figures.
var fullFigures = flag.Bool("figures", false, "run the recording-overhead rounds for the figures")

// serveEnv makes the test binary `verity client serve --client <value>`: a client program for the
// runs that speak to a Go client through the remote protocol.
const serveEnv = "VERITY_TEST_SERVE_CLIENT"

// TestMain fails the package if any container, network or volume of a cluster is left behind.
func TestMain(m *testing.M) {
	if name := os.Getenv(serveEnv); name != "" {
		if err := ServeClient(context.Background(), kafkaconf.ClientName(name), os.Stdin, os.Stdout, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(harnesstest.Main(m))
}
