#!/usr/bin/env bash
# Installs etcd for the tests of the etcd MetaStore (tests/unit/meta, tests/integration/cluster):
# Debian's etcd-server package (etcd 3.4, binary `etcd`). The tests start their own members on
# loopback ports with their own data directories; nothing here configures or starts a service.
# Idempotent: does nothing when `etcd` is already on the PATH.
set -euo pipefail

if command -v etcd >/dev/null 2>&1; then
  exit 0
fi
echo "setup: installing Debian's etcd-server (for the etcd MetaStore tests)"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends etcd-server
