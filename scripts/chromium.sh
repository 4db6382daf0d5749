#!/usr/bin/env bash
# Makes sure Debian's headless-capable Chromium is installed: the report's test opens report.html
# in it (console messages, the DOM as loaded). Idempotent: does nothing when `chromium` is on the
# PATH; otherwise installs the package (apt-get, as root).
set -euo pipefail

log() { printf 'chromium: %s\n' "$*" >&2; }

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "chromium is not installed and this script is not root to install it: sudo apt-get install chromium"
  exit 1
fi
log "installing Debian's chromium (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
log "installed: $(chromium --version 2>/dev/null)"
