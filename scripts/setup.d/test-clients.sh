#!/usr/bin/env bash
# Installs the Kafka clients of the compatibility matrix (tests/integration/compat), each from its
# own ecosystem, pinned, into ~/.cache/shale:
#   venv/                      confluent-kafka, kafka-python (+ codecs)       PyPI
#   compat/bin/franz-compat    franz-go program, built with `go build`         Go module proxy
#   compat/java/{lib,classes}  kafka-clients 4.x + deps, javac-compiled program Maven Central
#   compat/js/node_modules     kafkajs + pure-JS/WASM codecs (`npm ci`)        npm
# The librdkafka C++ program is built by CMake; kcat and librdkafka come from Debian.
# Idempotent: each part records a hash of its inputs and is redone only when they change, so a
# run with nothing to do takes well under a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC=tests/integration/compat/clients
CACHE="${HOME}/.cache/shale"
COMPAT="${CACHE}/compat"
mkdir -p "${COMPAT}"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# Toolchains: Debian's, unless the machine already has one on PATH.
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: test clients: installing Debian packages: ${need[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# up_to_date <marker> <files...>: true when the files hash to what <marker> recorded.
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
up_to_date() {
  local marker=$1
  shift
  [ -f "${marker}" ] && [ "$(cat "${marker}")" = "$(hash_of "$@")" ]
}
timed() {  # what, command...
  local what=$1 start
  shift
  start=$(date +%s)
  "$@"
  echo "setup: test clients: ${what} in $(($(date +%s) - start)) s"
}

# --- Python: confluent-kafka, kafka-python --------------------------------------------------
py_install() {
  [ -x "${CACHE}/venv/bin/python" ] || python3 -m venv "${CACHE}/venv"
  "${CACHE}/venv/bin/pip" install -q --disable-pip-version-check -r "${SRC}/python/requirements.txt"
  hash_of "${SRC}/python/requirements.txt" >"${CACHE}/venv/.compat-requirements"
}
up_to_date "${CACHE}/venv/.compat-requirements" "${SRC}/python/requirements.txt" ||
  timed "Python clients (PyPI)" py_install

# --- Go: franz-go -----------------------------------------------------------------------------
go_build() {
  mkdir -p "${COMPAT}/bin"
  (cd "${SRC}/go" && GOFLAGS=-mod=readonly go build -o "${COMPAT}/bin/franz-compat" .)
  hash_of "${SRC}"/go/go.mod "${SRC}"/go/go.sum "${SRC}"/go/*.go >"${COMPAT}/bin/.franz-compat"
}
up_to_date "${COMPAT}/bin/.franz-compat" "${SRC}"/go/go.mod "${SRC}"/go/go.sum "${SRC}"/go/*.go &&
  [ -x "${COMPAT}/bin/franz-compat" ] || timed "franz-go program (Go module proxy)" go_build

# --- Java: kafka-clients ------------------------------------------------------------------
java_deps() {
  rm -rf "${COMPAT}/java/lib"
  local log="${COMPAT}/java/mvn.log"
  mvn -q -B -f "${SRC}/java/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="${COMPAT}/java/lib" >"${log}" 2>&1 || {
    cat "${log}"
    return 1
  }
  hash_of "${SRC}/java/pom.xml" >"${COMPAT}/java/.lib"
}
java_build() {
  rm -rf "${COMPAT}/java/classes"
  mkdir -p "${COMPAT}/java/classes"
  javac -Xlint:all -Werror -d "${COMPAT}/java/classes" -cp "${COMPAT}/java/lib/*" "${SRC}"/java/*.java
  hash_of "${SRC}/java/pom.xml" "${SRC}"/java/*.java >"${COMPAT}/java/.classes"
}
mkdir -p "${COMPAT}/java"
up_to_date "${COMPAT}/java/.lib" "${SRC}/java/pom.xml" || timed "Java kafka-clients (Maven Central)" java_deps
up_to_date "${COMPAT}/java/.classes" "${SRC}/java/pom.xml" "${SRC}"/java/*.java ||
  timed "Java program (javac)" java_build

# --- JavaScript: kafkajs ----------------------------------------------------------------------
js_install() {
  mkdir -p "${COMPAT}/js"
  cp "${SRC}/js/package.json" "${SRC}/js/package-lock.json" "${COMPAT}/js/"
  (cd "${COMPAT}/js" && npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >/dev/null)
  hash_of "${SRC}/js/package-lock.json" >"${COMPAT}/js/.installed"
}
up_to_date "${COMPAT}/js/.installed" "${SRC}/js/package-lock.json" || timed "kafkajs (npm)" js_install
