#!/usr/bin/env bash
# A ZooKeeper server on this machine for the HA of an application cluster (start-application.sh --zookeeper):
# org.apache.zookeeper.server.ZooKeeperServerMain in its own JVM, from ZooKeeper's Maven artifacts
# (zookeeper/pom.xml next to this file, assembled once into deploy/local-cluster/target/zookeeper-lib).
#   deploy/local-cluster/zookeeper.sh start [--port P]   start it on 127.0.0.1:P (default 2181; 0: a free port)
#                                                        and print its address once it answers
#   deploy/local-cluster/zookeeper.sh stop               stop it (TERM, then KILL after 20 s)
#   deploy/local-cluster/zookeeper.sh kill               kill -9 it
#   deploy/local-cluster/zookeeper.sh pid|address        print its pid or HOST:PORT (exit 1 if it is not running)
# Its folder is $ROLLCOUNT_CLUSTER_DIR (default .rollcount/cluster): zookeeper/ (zoo.cfg, data),
# run/zookeeper.pid, log/zookeeper.out.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ZK_LIB_DIR="$HERE/target/zookeeper-lib"
ZK_DIR="$CLUSTER_DIR/zookeeper"

zk_stamp() { cat "$HERE/zookeeper/pom.xml" "$REPO/pom.xml" | md5sum | cut -d' ' -f1; }

ensure_zk_lib() {
  if [[ -f "$ZK_LIB_DIR/.complete" && "$(cat "$ZK_LIB_DIR/.complete")" == "$(zk_stamp)" ]]; then return 0; fi
  command -v mvn >/dev/null 2>&1 || die "Maven (mvn) is needed once to assemble ZooKeeper's jars into $ZK_LIB_DIR"
  log "assembling ZooKeeper's jars into $ZK_LIB_DIR (once)"
  rm -rf "$ZK_LIB_DIR"
  local args=(-B -q -f "$HERE/zookeeper/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$ZK_LIB_DIR")
  if ! mvn -o "${args[@]}" >"$HERE/target-zk-mvn.log" 2>&1; then
    mvn "${args[@]}" >"$HERE/target-zk-mvn.log" 2>&1 || { cat "$HERE/target-zk-mvn.log" >&2; die "assembling ZooKeeper's jars failed"; }
  fi
  rm -f "$HERE/target-zk-mvn.log"
  ls "$ZK_LIB_DIR"/zookeeper-*.jar >/dev/null 2>&1 || die "no zookeeper jar in $ZK_LIB_DIR"
  zk_stamp >"$ZK_LIB_DIR/.complete"
}

address() { [[ -f "$RUN_DIR/zookeeper.address" ]] && pid_of zookeeper >/dev/null && cat "$RUN_DIR/zookeeper.address"; }

start() {
  local port="$1" pid
  if pid="$(pid_of zookeeper)"; then log "ZooKeeper already running (pid $pid)"; address; return 0; fi
  ensure_zk_lib
  ((port == 0)) && port="$(free_port)"
  if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "port $port on 127.0.0.1 is in use: choose another with --port"; fi
  mkdir -p "$ZK_DIR/data" "$LOG_DIR" "$RUN_DIR"
  cat >"$ZK_DIR/zoo.cfg" <<CFG
# Written by deploy/local-cluster/zookeeper.sh: one standalone server on the loopback interface.
tickTime=1000
dataDir=$ZK_DIR/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr
CFG
  nohup "$JAVA" -Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dzookeeper.jmx.log4j.disable=true \
    -classpath "$ZK_LIB_DIR/*" org.apache.zookeeper.server.ZooKeeperServerMain "$ZK_DIR/zoo.cfg" \
    </dev/null >"$LOG_DIR/zookeeper.out" 2>&1 &
  echo $! >"$RUN_DIR/zookeeper.pid"
  echo "127.0.0.1:$port" >"$RUN_DIR/zookeeper.address"
  local deadline=$((SECONDS + 60))
  until zookeeper_answers "127.0.0.1:$port"; do
    pid_of zookeeper >/dev/null || die "ZooKeeper exited; see $LOG_DIR/zookeeper.out"
    if ((SECONDS >= deadline)); then
      stop_process zookeeper
      die "ZooKeeper did not answer at 127.0.0.1:$port within 60 s; see $LOG_DIR/zookeeper.out"
    fi
    sleep 0.2
  done
  log "ZooKeeper started (pid $(cat "$RUN_DIR/zookeeper.pid")), data $ZK_DIR/data"
  echo "ZooKeeper running: 127.0.0.1:$port"
}

case "${1:-}" in
  start)
    port=2181
    [[ "${2:-}" == --port ]] && port="${3:-}"
    [[ "$port" =~ ^[0-9]+$ ]] || die "--port must be a port number"
    start "$port" ;;
  stop) stop_process zookeeper ;;
  kill) kill_process zookeeper KILL ;;
  pid) pid_of zookeeper ;;
  address) address ;;
  *) die "usage: zookeeper.sh start [--port P]|stop|kill|pid|address" ;;
esac
