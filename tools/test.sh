#!/usr/bin/env bash
# The tests, on a machine that has only what this repository's files install: installs from Debian's
# packages what the machine lacks (Java 17, Maven, redis-server and redis-cli, openssl, Prometheus for
# DashboardIT, python3-redis for the reading examples; as root, or with sudo), starts a Redis on 127.0.0.1:6379 if none answers, checks the format of
# the tree (mvn spotless:apply fixes it), then runs every test, the fault tests on a real Flink cluster
# included (mvn -B verify -Pcluster-tests). Extra arguments go to that mvn command (e.g. -o).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

as_root() {
  if [[ $(id -u) == 0 ]]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "tools/test.sh: install as root: $*" >&2; exit 1
  fi
}

need_pkgs=()
command -v java >/dev/null 2>&1 || need_pkgs+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need_pkgs+=(maven)
command -v redis-server >/dev/null 2>&1 || need_pkgs+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_pkgs+=(redis-tools)
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
# DashboardIT scrapes the local cluster with a real Prometheus server.
command -v prometheus >/dev/null 2>&1 || need_pkgs+=(prometheus)
# ReadingExamplesIT runs examples/python with redis-py, which Debian packages for its own /usr/bin/python3.
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need_pkgs+=(python3-redis)
if ((${#need_pkgs[@]})); then
  echo "tools/test.sh: installing ${need_pkgs[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
  echo "tools/test.sh: starting redis-server on 127.0.0.1:6379"
  dir="$(pwd)/.rollcount/redis"
  mkdir -p "$dir"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir "$dir" --logfile "$dir/redis.log"
  for _ in $(seq 1 50); do
    redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG && break
    sleep 0.2
  done
fi
redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG

# One format for the whole tree (mvn spotless:apply fixes it).
mvn -B -q spotless:check "$@"

mvn -B verify -Pcluster-tests "$@"
