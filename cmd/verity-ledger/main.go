// Command verity-ledger is a payment-like HTTP service: the side effect that Verity's sink
// workloads perform once per consumed Kafka event, as a consumer calling a payment API would. At
// the end of a run Verity reads the ledger to see which events were applied and how many times: an
// event applied twice is a duplicated side effect, an event never applied is a lost one. It runs in
// its own container behind a Toxiproxy proxy, so that faults can cut or slow its link and drop its
// answers; a lost answer that the client retries is how a payment gets applied twice, and an
// Idempotency-Key is how a client prevents that.
//
// API (every body is JSON except /healthz's; every error is {"error": "..."} naming the problem):
//
//	POST /payments   body {"event_id": "e-1", "amount": 100, "source": "consumer-1"}
//	                 event_id is required and non-empty; amount is an integer (0 when left out);
//	                 source is optional; other fields are refused.
//	  201 {"seq": N, "event_id": "e-1", "applied": true}
//	                 applied: appended to the ledger at position N (1-based).
//	  With an Idempotency-Key header the first request with that key is applied as above and its
//	  answer (status and body bytes) is remembered; every later request with the key gets exactly
//	  that answer, plus the header "Idempotent-Replayed: true", and applies nothing. A later request
//	  with the key but another event_id or amount gets 422 and applies nothing, as at Stripe; one
//	  that differs only in source is a replay, since another consumer retrying the same event after
//	  a rebalance is still the same payment. Requests with the same key never both apply: a request
//	  whose key is being applied by another waits for that one and then gets its answer (there is no
//	  409 "in progress"; waiting is simpler for clients and costs microseconds here). A request
//	  refused with a 4xx before being applied does not use up its key.
//	  400 no body, not JSON, not one JSON object, an unknown field, an empty or missing event_id,
//	      an empty, repeated or over-long (more than 255 characters) Idempotency-Key
//	  413 a body over 1 MiB
//	  422 an Idempotency-Key reused for another payment
//	GET /ledger
//	  200 {"entries": [{"seq": 1, "event_id": "e-1", "amount": 100, "source": "consumer-1",
//	                    "idempotency_key": "k-1", "at": "2026-01-02T03:04:05.123456789Z"}, ...],
//	       "keys": K, "replays": R}
//	      entries in seq order (idempotency_key left out when the request had none; at is the
//	      server's UTC time, RFC 3339 with nanoseconds); keys: distinct idempotency keys seen;
//	      replays: requests answered from a remembered key.
//	GET /healthz
//	  200 ok
//	A wrong method is 405 with an Allow header; an unknown path is 404.
//
// State is in memory only, so a restart loses the ledger. That is deliberate: the ledger measures
// the clients' behaviour, not the service's, and Verity's built-ins fault only the network link to
// it; the service-kill fault can kill it, and a run that does so loses its entries by design.
//
// Flags: -listen ADDR (default ":8080"), -log-level LEVEL (default info; debug logs one line per
// applied payment and per replay). Logs are slog text on stderr. SIGTERM or SIGINT shuts the
// server down gracefully (in-flight requests finish, at most 5 s) and exits 0; exit 1 when it
// cannot listen or the shutdown does not finish in time, 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const shutdownTimeout = 5 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	// Once the first signal has started the shutdown, a second one kills the process at once.
	context.AfterFunc(ctx, stop)
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// run serves until ctx is done, then shuts down; it returns the exit code. ready, when not nil, is
// called with the listening address once requests can be served (tests listen on port 0).
func run(ctx context.Context, args []string, stderr io.Writer, ready func(net.Addr)) int {
	fs := flag.NewFlagSet("verity-ledger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", ":8080", "`address` to listen on")
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "`level` of logs: debug (a line per applied payment and per replay), info, warn, error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "verity-ledger: unexpected arguments %q\n", fs.Args())
		return 2
	}

	h := slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	log := slog.New(h)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Error("cannot listen", "err", err)
		return 1
	}
	srv := &http.Server{
		Handler: newLedger(log),
		// Generous, because the link to the ledger is slowed on purpose: the bound only keeps a
		// client that never finishes its headers from holding a connection for ever.
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          slog.NewLogLogger(h, slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("verity-ledger listening", "addr", ln.Addr().String())
	if ready != nil {
		ready(ln.Addr())
	}

	select {
	case err := <-served:
		log.Error("serving failed", "err", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down", "cause", context.Cause(ctx).Error())
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("shutdown did not finish", "timeout", shutdownTimeout, "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
