#!/usr/bin/env bash
# Fetches the jar the Kafka protocol code is generated from: org.apache.kafka:kafka-clients at
# the version and SHA-256 pinned in tools/codegen/kafka-clients.pin, from Maven Central, into
# ~/.cache/shale/kafka-clients-<ver>/. tools/codegen/gen.py and its drift test
# (Codegen.CommittedFilesMatchGenerator) read the message schemas straight out of it.
# Idempotent: returns at once when the jar is there with the pinned checksum.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=../../tools/codegen/kafka-clients.pin
source tools/codegen/kafka-clients.pin
DEST="${HOME}/.cache/shale/kafka-clients-${KAFKA_CLIENTS_VERSION}"
JAR="${DEST}/kafka-clients-${KAFKA_CLIENTS_VERSION}.jar"

sum_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "${KAFKA_CLIENTS_SHA256}" ]; }
sum_ok "${JAR}" && exit 0

if ! command -v mvn >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    maven openjdk-17-jre-headless
fi
echo "setup: fetching org.apache.kafka:kafka-clients:${KAFKA_CLIENTS_VERSION} (message schemas) from Maven Central"
mkdir -p "${DEST}"
rm -f "${JAR}"
log="${DEST}/mvn.log"
mvn -q -B dependency:copy -Dartifact="org.apache.kafka:kafka-clients:${KAFKA_CLIENTS_VERSION}" \
  -DoutputDirectory="${DEST}" >"${log}" 2>&1 || {
  cat "${log}"
  exit 1
}
if ! sum_ok "${JAR}"; then
  echo "setup: ${JAR}: SHA-256 is not the one pinned in tools/codegen/kafka-clients.pin" >&2
  rm -f "${JAR}"
  exit 1
fi
