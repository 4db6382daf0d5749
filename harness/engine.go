package harness

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"strings"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/verity-kafka/verity/kafkaconf"
)

// Image tags. The official ones are used when present locally; otherwise the offline stand-ins
// that `make images` builds (docker/build-images.sh). Kafka's are per release (KafkaImages).
const (
	OfficialToxiproxyImage = "ghcr.io/shopify/toxiproxy:2.12.0"
	StandInToxiproxyImage  = "verity/toxiproxy:2.12.0"
	// The side-effect services' images (Spec.Postgres, Spec.Ledger). The ledger is Verity's own
	// (cmd/verity-ledger): it has no official image.
	OfficialPostgresImage = "postgres:15"
	StandInPostgresImage  = "verity/postgres:15"
	StandInLedgerImage    = "verity/ledger:1"
)

// KafkaImages are the official image of Kafka release v and Verity's offline stand-in of it.
func KafkaImages(v kafkaconf.KafkaVersion) (official, standIn string) {
	return "apache/kafka:" + string(v.Or()), "verity/kafka:" + string(v.Or())
}

// ErrEngine is wrapped by every error that comes from an unreachable Docker engine.
var ErrEngine = errors.New("no Docker engine answers")

// ErrImage is wrapped by errors about a missing image.
var ErrImage = errors.New("image missing")

// engine is a Docker API client. Ryuk is disabled: the harness removes what it creates itself
// (Close, Reap), and the Ryuk image cannot be pulled where no registry is reachable.
type engine struct {
	*testcontainers.DockerClient
	// host is where this process reaches the ports the engine publishes; remote is true when
	// that is not this machine's loopback (EngineHost).
	host   string
	remote bool
}

// EngineHost is the address at which this process reaches the ports the Docker engine
// publishes: TESTCONTAINERS_HOST_OVERRIDE when set, else the host of DOCKER_HOST for a tcp://
// or ssh:// engine (docker-in-docker, a shared CI engine), else 127.0.0.1 (a local socket).
// remote is true for any host but the loopback: the harness then publishes ports on every
// interface of the engine's machine, since its loopback is not ours.
func EngineHost() (host string, remote bool, err error) {
	host = os.Getenv("TESTCONTAINERS_HOST_OVERRIDE")
	if host == "" {
		host = "127.0.0.1"
		if dh := os.Getenv("DOCKER_HOST"); dh != "" {
			u, perr := url.Parse(dh)
			if perr != nil {
				return "", false, fmt.Errorf("DOCKER_HOST=%s: %w", dh, perr)
			}
			switch u.Scheme {
			case "tcp", "ssh", "http", "https":
				if u.Hostname() == "" {
					return "", false, fmt.Errorf("DOCKER_HOST=%s names no host", dh)
				}
				host = u.Hostname()
			}
		}
	}
	switch host {
	case "127.0.0.1", "localhost", "::1":
		return host, false, nil
	}
	if ip, perr := netip.ParseAddr(host); perr == nil && ip.IsLoopback() {
		return host, false, nil
	}
	return host, true, nil
}

func connect(ctx context.Context) (*engine, error) {
	host, remote, err := EngineHost()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEngine, err)
	}
	// testcontainers reads these once, on first use, so they must be set before any container
	// call. Without the host override it guesses the engine's host from the default gateway (on
	// these machines an address nothing listens on) instead of the machine where the harness
	// publishes every port.
	for k, v := range map[string]string{"TESTCONTAINERS_RYUK_DISABLED": "true", "TESTCONTAINERS_HOST_OVERRIDE": host} {
		if os.Getenv(k) == "" {
			if err := os.Setenv(k, v); err != nil {
				return nil, fmt.Errorf("setting %s: %w", k, err)
			}
		}
	}
	// testcontainers falls back to the default socket when DOCKER_HOST does not answer; a user who
	// named an engine must not silently get another one, so check theirs first.
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		plain, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
		if err == nil {
			_, err = plain.Ping(ctx, client.PingOptions{})
			_ = plain.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("%w at DOCKER_HOST=%s (%v); start it, or unset DOCKER_HOST and run `make engine`", ErrEngine, host, err)
		}
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v; start one with `make engine` (scripts/engine.sh) and try again", ErrEngine, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w (%v); start one with `make engine` (scripts/engine.sh) and try again", ErrEngine, err)
	}
	return &engine{DockerClient: cli, host: host, remote: remote}, nil
}

// image is what the engine says of an image it has.
type image struct {
	id     string // sha256 of its configuration
	labels map[string]string
}

// image inspects ref; ok is false when the engine does not have it.
func (e *engine) image(ctx context.Context, ref string) (image, bool) {
	in, err := e.ImageInspect(ctx, ref)
	if err != nil {
		return image{}, false
	}
	var labels map[string]string
	if in.Config != nil {
		labels = in.Config.Labels
	}
	return image{id: in.ID, labels: labels}, true
}

// JMXAgentLabel, on a Kafka image, names the path in the image of a Jolokia JVM agent jar: the
// nodes then start with it and Cluster.ReadMetrics reads their JMX metrics (Verity's stand-in
// carries one; see docker/kafka).
const JMXAgentLabel = "io.verity.jmx-agent"

// ToxicsLabel, on a Toxiproxy image, lists (comma-separated) the toxics it has beyond
// Toxiproxy's own: Verity's stand-in has kafkatoxic.Type.
const ToxicsLabel = "io.verity.toxics"

// Images says which images a run uses and why. KafkaID and ToxiproxyID are the images' ids
// (sha256 of their configuration): a locally built stand-in has no registry digest, and the id
// tells two builds of one tag apart.
type Images struct {
	Kafka, Toxiproxy     string
	KafkaID, ToxiproxyID string
	Why                  string
	// JMXAgent is the path of the Kafka image's JMX agent (its JMXAgentLabel), "" when it has none.
	JMXAgent string
	// Toxics are the Toxiproxy image's toxics beyond Toxiproxy's own (its ToxicsLabel).
	Toxics []string
	// Postgres and Ledger are the side-effect services' images, and PostgresID and LedgerID
	// their ids; all "" unless the spec asks for the service (Spec.Postgres, Spec.Ledger).
	Postgres, Ledger     string
	PostgresID, LedgerID string
}

// EngineInfo is what the Docker engine says of the machine the nodes run on.
type EngineInfo struct {
	Cores       int
	MemoryBytes int64
	Version     string
}

// info asks the engine about its machine; zero values where it does not say.
func (e *engine) info(ctx context.Context) EngineInfo {
	in, err := e.Info(ctx, client.InfoOptions{})
	if err != nil {
		return EngineInfo{}
	}
	return EngineInfo{Cores: in.Info.NCPU, MemoryBytes: in.Info.MemTotal, Version: in.Info.ServerVersion}
}

// ChooseImages picks the images: VERITY_KAFKA_IMAGE / VERITY_TOXIPROXY_IMAGE (or the spec's
// fields) if set, else the official tags if present locally, else the stand-ins. An image that is
// not present locally is an error that says how to get it. The services' images
// (VERITY_POSTGRES_IMAGE / VERITY_LEDGER_IMAGE, the same way) are picked only when the spec asks
// for the service.
func ChooseImages(ctx context.Context, spec Spec) (Images, error) {
	e, err := connect(ctx)
	if err != nil {
		return Images{}, err
	}
	defer e.Close()
	return e.chooseImages(ctx, spec, spec.Logger)
}

func (e *engine) chooseImages(ctx context.Context, spec Spec, log *slog.Logger) (Images, error) {
	// pick returns the image chosen, what the one inspect that found it said, and why.
	pick := func(explicit, env, official, standIn string) (string, image, string, error) {
		if explicit == "" {
			explicit = os.Getenv(env)
		}
		if explicit != "" {
			im, ok := e.image(ctx, explicit)
			if !ok {
				return "", image{}, "", fmt.Errorf("%w: %s (asked for by %s) is not present locally; build or load it, or unset %s", ErrImage, explicit, env, env)
			}
			return explicit, im, "set by " + env, nil
		}
		if official == "" { // Verity's own: the stand-in is the image
			if im, ok := e.image(ctx, standIn); ok {
				return standIn, im, "Verity's own, present locally", nil
			}
			return "", image{}, "", fmt.Errorf("%w: %s is not present; run `make images` and try again", ErrImage, standIn)
		}
		if im, ok := e.image(ctx, official); ok {
			return official, im, "official, present locally", nil
		}
		if im, ok := e.image(ctx, standIn); ok {
			return standIn, im, "offline stand-in (" + official + " not present)", nil
		}
		return "", image{}, "", fmt.Errorf("%w: neither %s nor %s is present; run `make images` and try again", ErrImage, official, standIn)
	}
	official, standIn := KafkaImages(spec.KafkaVersion)
	k, kim, kwhy, err := pick(spec.KafkaImage, "VERITY_KAFKA_IMAGE", official, standIn)
	if err != nil {
		return Images{}, err
	}
	t, tim, twhy, err := pick(spec.ToxiproxyImage, "VERITY_TOXIPROXY_IMAGE", OfficialToxiproxyImage, StandInToxiproxyImage)
	if err != nil {
		return Images{}, err
	}
	im := Images{Kafka: k, Toxiproxy: t, KafkaID: kim.id, ToxiproxyID: tim.id, JMXAgent: kim.labels[JMXAgentLabel],
		Why: fmt.Sprintf("kafka: %s; toxiproxy: %s", kwhy, twhy)}
	if l := tim.labels[ToxicsLabel]; l != "" {
		im.Toxics = strings.Split(l, ",")
	}
	if spec.Postgres {
		p, pim, pwhy, err := pick(spec.PostgresImage, "VERITY_POSTGRES_IMAGE", OfficialPostgresImage, StandInPostgresImage)
		if err != nil {
			return Images{}, err
		}
		im.Postgres, im.PostgresID, im.Why = p, pim.id, im.Why+"; postgres: "+pwhy
	}
	if spec.Ledger {
		l, lim, lwhy, err := pick(spec.LedgerImage, "VERITY_LEDGER_IMAGE", "", StandInLedgerImage)
		if err != nil {
			return Images{}, err
		}
		im.Ledger, im.LedgerID, im.Why = l, lim.id, im.Why+"; ledger: "+lwhy
	}
	if log != nil {
		log.Info("images chosen", "kafka", k, "kafka_why", kwhy, "toxiproxy", t, "toxiproxy_why", twhy)
		if spec.Postgres || spec.Ledger {
			log.Info("service images chosen", "postgres", im.Postgres, "ledger", im.Ledger, "why", im.Why)
		}
	}
	return im, nil
}

// Ping reports whether a Docker engine answers, with an error that says what to do if not.
func Ping(ctx context.Context) error {
	e, err := connect(ctx)
	if err != nil {
		return err
	}
	return e.Close()
}

// NewRunID returns a fresh random run id, as Start gives a Spec without one; a caller that
// names the run before it starts (to print it, so that a run stopped mid-start can be reaped by
// it) takes one here.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// clusterID derives a KRaft cluster id (22 characters of base64url of 16 bytes) from the run id,
// so that a run's nodes agree on it and a re-formatted node (disk loss) gets the same one.
func clusterID(runID string) string {
	sum := sha256.Sum256([]byte("verity:" + runID))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}
