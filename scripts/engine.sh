#!/usr/bin/env bash
# Makes sure a Docker engine answers on this machine. Idempotent: does nothing when one already
# answers; otherwise installs Debian's docker.io (if dockerd is absent), removes a stale pid file
# left by a killed daemon, starts dockerd in the background and waits until it answers.
# With DOCKER_HOST set (a remote engine: docker-in-docker, a shared CI engine) it starts nothing:
# it installs the docker client if absent and waits for that engine to answer.
# Exit status 0 when an engine answers at the end, 1 otherwise (with the reason on stderr).
set -euo pipefail

log() { printf 'engine: %s\n' "$*" >&2; }
answers() { timeout 10 docker info >/dev/null 2>&1; }
wait_answer() {
  local deadline=$((SECONDS + ${1:-60}))
  while ((SECONDS < deadline)); do
    answers && return 0
    sleep 1
  done
  return 1
}

if command -v docker >/dev/null 2>&1 && answers; then
  log "a Docker engine already answers; nothing to do"
  exit 0
fi

if [ -n "${DOCKER_HOST:-}" ] && [[ "$DOCKER_HOST" != unix://* ]]; then
  if ! command -v docker >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
      log "DOCKER_HOST=$DOCKER_HOST but no docker client is installed, and this script is not root to install it"
      exit 1
    fi
    log "installing Debian's docker client (apt-get) for the engine at DOCKER_HOST=$DOCKER_HOST"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends docker.io ca-certificates >&2
  fi
  if wait_answer 90; then
    log "the engine at DOCKER_HOST=$DOCKER_HOST answers: $(docker version --format 'server {{.Server.Version}}, API {{.Server.APIVersion}}' 2>/dev/null)"
    exit 0
  fi
  log "no engine answers at DOCKER_HOST=$DOCKER_HOST within 90 s; start it, or unset DOCKER_HOST to use a local one"
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  log "no Docker engine answers and this script is not root, so it cannot install or start one."
  log "start Docker yourself (or run: sudo $0), then try again."
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "dockerd is not installed: installing Debian's docker.io (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends docker.io iptables ca-certificates >&2
fi

# A dockerd/containerd killed at the end of a session leaves pid files behind; the next daemon refuses
# to start while they exist, so remove any whose process is gone.
for pidfile in /var/run/docker.pid /run/docker/containerd/containerd.pid; do
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
      log "removing stale pid file $pidfile"
      rm -f "$pidfile"
    fi
  fi
done

if ! pgrep -x dockerd >/dev/null 2>&1; then
  logfile=/var/log/verity-dockerd.log
  log "starting dockerd in the background (log: $logfile)"
  nohup dockerd >"$logfile" 2>&1 &
fi

if wait_answer 90; then
  log "Docker engine answers: $(docker version --format 'server {{.Server.Version}}, API {{.Server.APIVersion}}' 2>/dev/null)"
  exit 0
fi
log "dockerd did not answer within 90 s; see /var/log/verity-dockerd.log"
exit 1
