#!/usr/bin/env bash
# make images: makes sure these images are present locally:
#   Kafka V           for each release V of VERITY_KAFKA_VERSIONS (default: every release Verity
#                     runs, kafkaconf.Releases): apache/kafka:V, else verity/kafka:V (the official
#                     jars and the Jolokia JMX agent from Maven on a debootstrapped Debian bookworm +
#                     OpenJDK 17, with the lazy filesystem cmd/verity-lazyfs; one shared base)
#   Toxiproxy 2.12.0  ghcr.io/shopify/toxiproxy:2.12.0, else verity/toxiproxy:2.12.0 (the server
#                     of the Go module with Verity's Kafka request toxic, cmd/verity-toxiproxy,
#                     static, FROM scratch)
#   PostgreSQL 15     postgres:15, else verity/postgres:15 (Debian bookworm's postgresql-15 on a
#                     debootstrapped base, with an entrypoint that keeps the official contract)
#   Verity's ledger   verity/ledger:1 (cmd/verity-ledger, static, FROM scratch; no official image)
# The official tags are used when they are present or can be pulled; otherwise the offline
# stand-ins are built. An image already present is reused, so on a warm machine this takes seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log() { printf 'images: %s\n' "$*" >&2; }
have() { docker image inspect "$1" >/dev/null 2>&1; }
# A stand-in is rebuilt when its recipe (the files under docker/<name>/) changed since it was built.
# The Kafka stand-in also carries the lazy filesystem and the ledger stand-in is the ledger, so
# their binaries are part of their recipes (the builds are reproducible: -trimpath, no build id).
recipe() {
  { (cd "$here/$1" && cat $(ls | sort))
    case $1 in
      kafka) cat "$LAZYFS"; echo "$KAFKA_VERSION" ;;
      ledger) cat "$LEDGER" ;;
      toxiproxy) cat "$TOXIPROXY" ;;
    esac
  } | sha256sum | cut -c1-16
}
current() { # current IMAGE RECIPE-DIR
  have "$1" && [ "$(docker image inspect -f '{{index .Config.Labels "io.verity.recipe"}}' "$1")" = "$(recipe "$2")" ]
}
# Pulling fails at once where no registry is reachable; a short timeout covers a hanging one.
try_pull() { timeout 60 docker pull -q "$1" >/dev/null 2>&1; }

# Kept equal to kafkaconf.Releases() and kafkaconf.DefaultKafkaVersion by a unit test
# (kafkaconf/docs_test.go). VERITY_KAFKA_VERSIONS=default builds the default release alone (make run).
KAFKA_VERSIONS_DEFAULT="3.9.2 4.0.2 4.1.2 4.2.2 4.3.1 4.4.0"
KAFKA_DEFAULT="4.3.1"
KAFKA_VERSIONS=${VERITY_KAFKA_VERSIONS:-$KAFKA_VERSIONS_DEFAULT}
[ "$KAFKA_VERSIONS" = default ] && KAFKA_VERSIONS=$KAFKA_DEFAULT
TOXI_OFFICIAL=ghcr.io/shopify/toxiproxy:2.12.0
PG_OFFICIAL=postgres:15
TOXI_STANDIN=verity/toxiproxy:2.12.0
PG_STANDIN=verity/postgres:15
LEDGER_STANDIN=verity/ledger:1
BASE=verity/debian-jre17:bookworm
PG_BASE=verity/debian-postgres15:bookworm
WORK=${VERITY_BUILD_DIR:-${TMPDIR:-/tmp}/verity-image-build}
export DOCKER_BUILDKIT=0 # the legacy builder needs no buildx plugin and no registry
LAZYFS=$WORK/verity-lazyfs
LEDGER=$WORK/verity-ledger
TOXIPROXY=$WORK/verity-toxiproxy
mkdir -p "$WORK"
(cd "$here/.." && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w -buildid=' -o "$LAZYFS" ./cmd/verity-lazyfs) ||
  { log "building the lazy filesystem (cmd/verity-lazyfs) failed"; exit 1; }
(cd "$here/.." && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w -buildid=' -o "$LEDGER" ./cmd/verity-ledger) ||
  { log "building the ledger (cmd/verity-ledger) failed"; exit 1; }
(cd "$here/.." && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w -buildid=' -o "$TOXIPROXY" ./cmd/verity-toxiproxy) ||
  { log "building the Toxiproxy server (cmd/verity-toxiproxy) failed"; exit 1; }

# debootstrap_base IMAGE PACKAGES [docker import -c OPTION]...: a Debian bookworm minbase root
# filesystem with PACKAGES (comma-separated, their dependencies resolved) from the mirror this
# machine's apt uses, imported as IMAGE; built once (a base is never rebuilt while present).
debootstrap_base() {
  local image=$1 packages=$2; shift 2
  have "$image" && { log "base $image present"; return; }
  command -v debootstrap >/dev/null 2>&1 || {
    log "installing debootstrap (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2 ||
      { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2; }
  }
  local mirror name=${image//[\/:]/-}
  local rootfs=$WORK/rootfs-$name blog=$WORK/debootstrap-$name.log
  mirror=${DEBIAN_MIRROR:-$("$here/debian-mirror.sh")}
  log "building $image with debootstrap (bookworm, $packages); takes a few minutes"
  rm -rf "$rootfs"; mkdir -p "$WORK"
  debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" "$mirror" >"$blog" 2>&1 ||
    { tail -n 20 "$blog" >&2; log "debootstrap failed (full log: $blog)"; exit 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  local opts=(-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin')
  for o in "$@"; do opts+=(-c "$o"); done
  tar -C "$rootfs" -c . | docker import "${opts[@]}" - "$image" >/dev/null
  rm -rf "$rootfs"
  log "built $image"
}

build_base() {
  debootstrap_base "$BASE" openjdk-17-jre-headless,bash,procps,ca-certificates,netbase \
    'ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64'
}

build_kafka() { # of release $KAFKA_VERSION
  build_base
  local ctx=$WORK/kafka-$KAFKA_VERSION standin=verity/kafka:$KAFKA_VERSION logging=()
  rm -rf "$ctx"; mkdir -p "$ctx/libs"
  case $KAFKA_VERSION in 3.*) logging=(-Dkafka.reload4j) ;; esac
  log "collecting the Apache Kafka $KAFKA_VERSION jars with Maven"
  mvn -q -B -f "$here/kafka/pom.xml" dependency:copy-dependencies "-Dkafka.version=$KAFKA_VERSION" "${logging[@]}" \
    -DoutputDirectory="$ctx/libs" -DincludeScope=runtime >&2
  mv "$ctx"/libs/jolokia-agent-jvm-*-javaagent.jar "$ctx/jolokia-agent.jar"
  cp "$here/kafka/"* "$ctx/"
  rm "$ctx/pom.xml"
  cp "$LAZYFS" "$ctx/verity-lazyfs"
  docker build --build-arg BASE="$BASE" --build-arg KAFKA_VERSION="$KAFKA_VERSION" --label io.verity.recipe="$(recipe kafka)" \
    -t "$standin" "$ctx" >"$WORK/kafka-$KAFKA_VERSION-build.log" 2>&1 ||
    { tail -n 30 "$WORK/kafka-$KAFKA_VERSION-build.log" >&2; log "docker build failed (log: $WORK/kafka-$KAFKA_VERSION-build.log)"; exit 1; }
  rm -rf "$ctx"
  log "built $standin"
}

build_toxiproxy() {
  local ctx=$WORK/toxiproxy
  rm -rf "$ctx"; mkdir -p "$ctx"
  cp "$TOXIPROXY" "$ctx/toxiproxy"
  cp "$here/toxiproxy/Dockerfile" "$ctx/"
  docker build --label io.verity.recipe="$(recipe toxiproxy)" -t "$TOXI_STANDIN" "$ctx" \
    >"$WORK/toxiproxy-build.log" 2>&1 || { tail -n 30 "$WORK/toxiproxy-build.log" >&2; log "docker build failed (log: $WORK/toxiproxy-build.log)"; exit 1; }
  rm -rf "$ctx"
  log "built $TOXI_STANDIN"
}

build_postgres() {
  # The base is Debian's postgresql-15 as installed (with the "main" cluster the package makes,
  # which the Dockerfile removes: the entrypoint makes the cluster in PGDATA on first start).
  debootstrap_base "$PG_BASE" postgresql-15,bash,ca-certificates,netbase,procps
  local ctx=$WORK/postgres
  rm -rf "$ctx"; mkdir -p "$ctx"
  cp "$here/postgres/"{Dockerfile,entrypoint} "$ctx/"
  docker build --build-arg BASE="$PG_BASE" --label io.verity.recipe="$(recipe postgres)" -t "$PG_STANDIN" "$ctx" \
    >"$WORK/postgres-build.log" 2>&1 || { tail -n 30 "$WORK/postgres-build.log" >&2; log "docker build failed (log: $WORK/postgres-build.log)"; exit 1; }
  rm -rf "$ctx"
  log "built $PG_STANDIN"
}

build_ledger() {
  local ctx=$WORK/ledger
  rm -rf "$ctx"; mkdir -p "$ctx"
  cp "$here/ledger/"* "$ctx/"
  cp "$LEDGER" "$ctx/verity-ledger"
  docker build --label io.verity.recipe="$(recipe ledger)" -t "$LEDGER_STANDIN" "$ctx" \
    >"$WORK/ledger-build.log" 2>&1 || { tail -n 30 "$WORK/ledger-build.log" >&2; log "docker build failed (log: $WORK/ledger-build.log)"; exit 1; }
  rm -rf "$ctx"
  log "built $LEDGER_STANDIN"
}

ensure() { # ensure OFFICIAL STANDIN RECIPE-DIR BUILDER (OFFICIAL "": there is none, build the stand-in)
  if [ -n "$1" ] && have "$1"; then log "using $1 (present)"; return; fi
  if current "$2" "$3"; then log "using $2 (present, recipe unchanged)"; return; fi
  if have "$2"; then log "$2 is out of date with docker/$3: rebuilding it"; "$4"; return; fi
  if [ -z "$1" ]; then log "building $2"; "$4"; return; fi
  if [ "${VERITY_TRY_PULL:-1}" = 1 ] && try_pull "$1"; then log "pulled $1"; return; fi
  log "$1 cannot be pulled here: building the offline stand-in $2"
  "$4"
}

for KAFKA_VERSION in $KAFKA_VERSIONS; do
  ensure "apache/kafka:$KAFKA_VERSION" "verity/kafka:$KAFKA_VERSION" kafka build_kafka
done
ensure "$TOXI_OFFICIAL" "$TOXI_STANDIN" toxiproxy build_toxiproxy
ensure "$PG_OFFICIAL" "$PG_STANDIN" postgres build_postgres
ensure "" "$LEDGER_STANDIN" ledger build_ledger
