#!/usr/bin/env bash
# Installs the S3-compatible test server used by tests/integration/s3: moto's server mode
# (PyPI, pinned), in its own virtualenv under ~/.cache/shale/, plus libxml2's headers for the
# S3 backend. Idempotent: does nothing when the pinned version is already there.
# moto verifies SigV4 signatures once IAM authentication is switched on (INITIAL_NO_AUTH_ACTION_
# COUNT / POST /moto-api/reset-auth); scripts/s3-test-server does that.
set -euo pipefail

MOTO_VERSION=5.2.5
VENV="${HOME}/.cache/shale/moto-${MOTO_VERSION}"

if ! dpkg-query -W -f='${Status}' libxml2-dev 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends libxml2-dev
fi

if [ -x "${VENV}/bin/moto_server" ] && [ -f "${VENV}/.installed" ]; then
  exit 0
fi
echo "setup: installing moto[server]==${MOTO_VERSION} into ${VENV}"
rm -rf "${VENV}"
mkdir -p "$(dirname "${VENV}")"
python3 -m venv "${VENV}"
"${VENV}/bin/pip" install -q --disable-pip-version-check "moto[server]==${MOTO_VERSION}"
touch "${VENV}/.installed"
