#!/usr/bin/env bash
# Installs Apache Kafka (broker + CLI tools + log4j2 backend) from Maven Central into
# ~/.cache/shale/kafka-<ver>/libs, for scripts/kafka (compatibility tests, side-by-side benchmarks).
# Idempotent: returns at once when the jar directory is complete (marker file written last).
set -euo pipefail

KAFKA_VERSION="${SHALE_KAFKA_VERSION:-4.1.2}"
LOG4J_VERSION=2.25.3
SLF4J_VERSION=2.0.17
DEST="${HOME}/.cache/shale/kafka-${KAFKA_VERSION}"
MARKER="${DEST}/.complete"

if [ -f "${MARKER}" ]; then
  exit 0
fi

need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi

echo "setup: installing Apache Kafka ${KAFKA_VERSION} jars from Maven Central into ${DEST}"
start=$(date +%s)
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
cat >"${work}/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.shale</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-server</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-storage</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-metadata</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-raft</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-group-coordinator</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>${SLF4J_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-api</artifactId><version>${LOG4J_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>${LOG4J_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>${LOG4J_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-1.2-api</artifactId><version>${LOG4J_VERSION}</version></dependency>
  </dependencies>
</project>
POM
rm -rf "${DEST}"
mkdir -p "${DEST}/libs"
mvn -q -B -f "${work}/pom.xml" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="${DEST}/libs"
echo "${KAFKA_VERSION}" >"${MARKER}"
echo "setup: Kafka ${KAFKA_VERSION}: $(ls "${DEST}/libs" | wc -l) jars in $(($(date +%s) - start)) s"
