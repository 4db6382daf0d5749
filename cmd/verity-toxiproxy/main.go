// Command verity-toxiproxy is Toxiproxy's server with Verity's Kafka request toxic registered
// (package kafkatoxic, type "kafka_request"): the offline stand-in for the official image, with
// its command line (-host, -port, -config, -seed) and API. The official image works without it;
// the request-level faults are then unavailable.
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/verity-kafka/verity/kafkatoxic"
)

func main() {
	host := flag.String("host", "localhost", "host for the API to listen on")
	port := flag.String("port", "8474", "port for the API to listen on")
	config := flag.String("config", "", "JSON file of proxies to create on startup")
	seed := flag.Int64("seed", time.Now().UnixNano(), "seed for toxicity")
	version := flag.Bool("version", false, "print the version")
	flag.Parse()
	if *version {
		fmt.Printf("toxiproxy-server version %s (verity, with %s)\n", toxiproxy.Version, kafkatoxic.Type)
		return
	}
	rand.New(rand.NewSource(*seed)) // #nosec G404 -- Toxiproxy's toxicity, not a secret

	kafkatoxic.Register()
	logger := zerolog.New(os.Stdout).With().Timestamp().Logger()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger)
	if *config != "" {
		server.PopulateConfig(*config)
	}
	go func() {
		if err := server.Listen(net.JoinHostPort(*host, *port)); err != nil {
			logger.Err(err).Msg("the API server ended")
			os.Exit(1)
		}
	}()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	if err := server.Shutdown(); err != nil {
		logger.Err(err).Msg("shutting down")
		os.Exit(1)
	}
}
