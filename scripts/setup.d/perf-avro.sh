#!/usr/bin/env bash
# Debian packages for `shale perf --value-schema` (Avro payloads): the avro-c and jansson
# headers. Idempotent; does nothing when they are installed.
set -euo pipefail
missing=()
for p in libavro-dev libjansson-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "perf-avro: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
