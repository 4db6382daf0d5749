#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt already uses, so nothing in the repo names one.
set -euo pipefail
m=""
if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
  m=$(awk '/^URIs:/ {for (i=2;i<=NF;i++) if ($i !~ /security/) {print $i; exit}}' /etc/apt/sources.list.d/*.sources || true)
fi
if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
  m=$(awk '$1=="deb" && $0 !~ /security/ {for (i=2;i<=NF;i++) if ($i ~ /^https?:/) {print $i; exit}}' /etc/apt/sources.list || true)
fi
if [ -z "$m" ]; then
  echo "debian-mirror: cannot find a Debian mirror in /etc/apt/sources.list(.d); set DEBIAN_MIRROR" >&2
  exit 1
fi
echo "$m"
