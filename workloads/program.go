package workloads

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/verity-kafka/verity/kafkaconf"
	"github.com/verity-kafka/verity/workloads/internal/kit"
	"github.com/verity-kafka/verity/workloads/kclient/remote"
)

// ProgramCommand is the command that runs client c, a program (kafkaconf.Client.IsProgram), at
// version ("": its default), building the program first when the cache (the user's cache
// directory, verity/programs) has none for this source and version. Kafka's Java client is
// built from clients/java with Maven (the mvn command and Maven Central, Java 17): about half a
// minute the first time, with the artifacts cached by Maven after that.
func ProgramCommand(ctx context.Context, c kafkaconf.Client, version string, log *slog.Logger) ([]string, error) {
	if !c.IsProgram() {
		return nil, fmt.Errorf("client %s is linked into Verity, not a program", c.Name)
	}
	log = kit.OrDiscard(log)
	if version == "" {
		version = c.DefaultVersion
	}
	if _, err := c.ParseVersion(version); err != nil {
		return nil, err
	}
	if c.Name != kafkaconf.Java {
		return nil, fmt.Errorf("no program is known for client %s", c.Name)
	}
	root, _, err := sourceRoot()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(root, "clients", "java")
	sum, err := hashTree(src, func(name string) bool { return strings.HasPrefix(name, ".") || name == "target" },
		func(name string) bool { return strings.HasSuffix(name, ".java") || name == "pom.xml" })
	if err != nil {
		return nil, fmt.Errorf("hashing the Java client program's source: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("the program cache: %w", err)
	}
	dir := filepath.Join(cache, "verity", "programs", fmt.Sprintf("%s@%s-%s", c.Name, version, sum))
	cmd := []string{"java", "-cp", filepath.Join(dir, "classes") + string(os.PathListSeparator) + filepath.Join(dir, "lib", "*"),
		"io.verity.client.Main"}
	if _, err := os.Stat(filepath.Join(dir, "classes")); err == nil {
		return cmd, nil
	}
	if err := buildJava(ctx, src, dir, version, log); err != nil {
		return nil, err
	}
	return cmd, nil
}

// buildJava compiles the Java program against kafka-clients version and copies its runtime
// dependencies beside the classes, into dir.
func buildJava(ctx context.Context, src, dir, version string, log *slog.Logger) error {
	what := "building the Java client program for kafka-clients " + version
	log.Info("building the Java client program", "version", version, "into", dir)
	began := time.Now()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer os.RemoveAll(tmp)
	mvn := exec.CommandContext(ctx, "mvn", "-q", "-B", "-f", filepath.Join(src, "pom.xml"), "-Dkafka.version="+version,
		"-Dverity.build="+filepath.Join(tmp, "target"), "compile", "dependency:copy-dependencies",
		"-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(tmp, "out", "lib"))
	if out, err := mvn.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: mvn: %w\n%s(is %s a release of kafka-clients that Maven serves?)", what, err, tail(out, 4000), version)
	}
	if err := os.Rename(filepath.Join(tmp, "target", "classes"), filepath.Join(tmp, "out", "classes")); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	// Renamed into place whole, so that a concurrent or interrupted build leaves nothing half
	// written under the cached name.
	if err := os.Rename(filepath.Join(tmp, "out"), dir); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(filepath.Join(dir, "classes")); serr != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	log.Info("Java client program built", "version", version, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// StartProgram starts the client program of env's client against env's cluster: cmd when given,
// else its own at version ("": its default), built first if need be. The caller closes it;
// env.Program takes it.
func StartProgram(ctx context.Context, env Env, version string, cmd []string, stderr io.Writer) (*remote.Client, error) {
	env, err := env.settled()
	if err != nil {
		return nil, err
	}
	c := env.kafka()
	if len(cmd) == 0 {
		if cmd, err = ProgramCommand(ctx, c, version, env.Log); err != nil {
			return nil, err
		}
	}
	rc, err := remote.Start(ctx, cmd, remote.HelloArgs{Brokers: env.Brokers, TxnProtocolCap: env.TxnProtocol}, stderr, env.Log)
	if err != nil {
		return nil, err
	}
	if want := kafkaconf.ClientName(rc.Info().Name); want != c.Name {
		_ = rc.Close()
		return nil, fmt.Errorf("the program for client %s says it is client %q", c.Name, rc.Info().Name)
	}
	return rc, nil
}

// logLines is a writer that logs each line written to it at debug level: a client program's
// standard error (Kafka's client logs a warning for every refused connection under a fault).
// Closing it ends the logging.
func logLines(log *slog.Logger, what, name string) io.WriteCloser {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			log.Debug(what, "client", name, "line", sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return pw
}
