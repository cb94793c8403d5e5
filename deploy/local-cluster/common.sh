# Shared by the scripts of deploy/local-cluster/ (sourced, not run).
#
# A Flink session cluster (start.sh) or application cluster (start-application.sh) on this machine from
# Flink's Maven artifacts: lib/ is assembled once by Maven
# (pom.xml next to this file, versions from the root pom) into deploy/local-cluster/target/lib; the
# cluster's own folder (conf, logs, pid files, checkpoints, savepoints, tmp) is $ROLLCOUNT_CLUSTER_DIR,
# by default .rollcount/cluster at the repository root.

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LIB_DIR="$HERE/target/lib"
CLUSTER_DIR="${ROLLCOUNT_CLUSTER_DIR:-$REPO/.rollcount/cluster}"
mkdir -p "$CLUSTER_DIR"
CLUSTER_DIR="$(cd "$CLUSTER_DIR" && pwd)"
CONF_DIR="$CLUSTER_DIR/conf"
LOG_DIR="$CLUSTER_DIR/log"
RUN_DIR="$CLUSTER_DIR/run"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
export FLINK_CONF_DIR="$CONF_DIR" FLINK_PLUGINS_DIR="$CLUSTER_DIR/plugins"

# The JVM flags Flink needs on Java 17 (Flink's default env.java.opts.all), the list ./rollcount uses too.
mapfile -t JAVA_17_OPTS < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$REPO/deploy/java17-flags" | grep -v '^$')

log() { echo "local-cluster: $*" >&2; }
die() { echo "local-cluster: $*" >&2; exit 1; }

# Flink's runtime jars, assembled once by Maven (offline first: ~/.m2 is usually warm).
lib_stamp() { cat "$HERE/pom.xml" "$REPO/pom.xml" | md5sum | cut -d' ' -f1; }

ensure_lib() {
  if [[ -f "$LIB_DIR/.complete" && "$(cat "$LIB_DIR/.complete")" == "$(lib_stamp)" ]]; then return 0; fi
  command -v mvn >/dev/null 2>&1 || die "Maven (mvn) is needed once to assemble Flink's jars into $LIB_DIR"
  log "assembling Flink's runtime jars into $LIB_DIR (once)"
  rm -rf "$LIB_DIR"
  local args=(-B -q -f "$HERE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIB_DIR")
  if ! mvn -o "${args[@]}" >"$HERE/target-mvn.log" 2>&1; then
    mvn "${args[@]}" >"$HERE/target-mvn.log" 2>&1 || { cat "$HERE/target-mvn.log" >&2; die "assembling lib/ failed"; }
  fi
  rm -f "$HERE/target-mvn.log"
  ls "$LIB_DIR"/flink-runtime-*.jar >/dev/null 2>&1 || die "no flink-runtime jar in $LIB_DIR"
  lib_stamp >"$LIB_DIR/.complete"
}

# write_conf REST_PORT RPC_PORT SLOTS METRICS_PORTS WHAT: conf/config.yaml and the log4j files of a cluster
# (WHAT, for the header) in $CLUSTER_DIR; its folders checkpoints/, savepoints/, tmp/, plugins/.
write_conf() {
  local rest_port="$1" rpc_port="$2" slots="$3" metrics_ports="$4" what="$5" script
  script="$(basename "$0")"
  mkdir -p "$CONF_DIR" "$LOG_DIR" "$RUN_DIR" "$CLUSTER_DIR/checkpoints" "$CLUSTER_DIR/savepoints" "$CLUSTER_DIR/tmp" "$CLUSTER_DIR/plugins"
  cat >"$CONF_DIR/config.yaml" <<YAML
# Written by deploy/local-cluster/$script: $what on the loopback interface of this machine.
jobmanager.rpc.address: 127.0.0.1
jobmanager.rpc.port: $rpc_port
jobmanager.bind-host: 127.0.0.1
taskmanager.bind-host: 127.0.0.1
taskmanager.host: 127.0.0.1
rest.address: 127.0.0.1
rest.bind-address: 127.0.0.1
rest.port: $rest_port

jobmanager.memory.process.size: 1024m
taskmanager.memory.process.size: 1536m
taskmanager.numberOfTaskSlots: $slots
parallelism.default: 2
# Spread a job's slots over the TaskManagers, so that one TaskManager's loss leaves spare slots.
taskmanager.load-balance.mode: SLOTS

state.backend.type: rocksdb
execution.checkpointing.incremental: true
execution.checkpointing.storage: filesystem
execution.checkpointing.dir: file://$CLUSTER_DIR/checkpoints
execution.checkpointing.savepoint-dir: file://$CLUSTER_DIR/savepoints
execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION
execution.checkpointing.num-retained: 2

restart-strategy.type: fixed-delay
restart-strategy.fixed-delay.attempts: 10
restart-strategy.fixed-delay.delay: 1 s

heartbeat.interval: 2000
heartbeat.timeout: 10000

io.tmp.dirs: $CLUSTER_DIR/tmp
web.tmpdir: $CLUSTER_DIR/tmp/web
YAML
  if [[ "$metrics_ports" != 0 ]]; then
    cat >>"$CONF_DIR/config.yaml" <<YAML

# Prometheus: every process (JobManager, TaskManagers) serves its metrics, Rollcount's rollcount_* among
# them, at http://HOST:PORT/metrics on the first free port of the range (flink-metrics-prometheus in lib/).
metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory
metrics.reporter.prom.port: $metrics_ports
YAML
  fi

  cat >"$CONF_DIR/log4j.properties" <<'PROPS'
# The JobManager's and TaskManagers' log: ${sys:log.file} (log/<process>.log), rolled at 50 MB.
monitorInterval = 30
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
logger.pekko.name = org.apache.pekko
logger.pekko.level = INFO
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = WARN
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = OFF
appender.main.name = MainAppender
appender.main.type = RollingFile
appender.main.append = true
appender.main.fileName = ${sys:log.file}
appender.main.filePattern = ${sys:log.file}.%i
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
appender.main.policies.type = Policies
appender.main.policies.size.type = SizeBasedTriggeringPolicy
appender.main.policies.size.size = 50MB
appender.main.strategy.type = DefaultRolloverStrategy
appender.main.strategy.max = 5
PROPS
  sed 's/^# The JobManager.*/# The flink client: log\/flink-client.log (its results go to the terminal)./' \
    "$CONF_DIR/log4j.properties" >"$CONF_DIR/log4j-cli.properties"
}

conf_value() { # conf_value KEY: the value of a flat key in config.yaml
  sed -n "s/^$1: *//p" "$CONF_DIR/config.yaml" | tail -n 1
}

rest_url() { echo "http://$(conf_value rest.address):$(conf_value rest.port)"; }

require_conf() {
  [[ -f "$CONF_DIR/config.yaml" ]] || die "no cluster configuration in $CONF_DIR: run deploy/local-cluster/start.sh first"
  [[ -f "$LIB_DIR/.complete" ]] || die "no Flink jars in $LIB_DIR: run deploy/local-cluster/start.sh first"
}

free_port() {
  python3 - <<'PY' 2>/dev/null || shuf -i 20000-60000 -n 1
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

pid_alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

pid_of() { # pid_of NAME: the pid in run/NAME.pid if that process is alive
  local f="$RUN_DIR/$1.pid" pid
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f")"
  pid_alive "$pid" && echo "$pid"
}

# resource_params JM|TM: the JVM flags (line 1) and -D arguments (line 2) Flink's own scripts compute.
resource_params() {
  local out
  out="$("$JAVA" -Xmx128m -cp "$LIB_DIR/*" -Dlog4j2.level=ERROR org.apache.flink.runtime.util.bash.BashJavaUtils \
    "GET_$1_RESOURCE_PARAMS" --configDir "$CONF_DIR" 2>&1)" || { echo "$out" >&2; die "BashJavaUtils GET_$1_RESOURCE_PARAMS failed"; }
  echo "$out" | sed -n 's/^BASH_JAVA_UTILS_EXEC_RESULT://p' | tail -n 2
}

# launch NAME MAINCLASS [ARGS...]: a background JVM with the memory flags of its role, pid in run/NAME.pid.
launch() {
  local name="$1" main="$2"; shift 2
  local role=TM; [[ "$name" == jobmanager ]] && role=JM
  local params jvm dyn
  params="$(resource_params "$role")"
  jvm="$(echo "$params" | sed -n 1p)"
  dyn="$(echo "$params" | sed -n 2p)"
  [[ -n "$jvm" && -n "$dyn" ]] || die "no resource parameters for $name"
  mkdir -p "$LOG_DIR" "$RUN_DIR"
  # shellcheck disable=SC2086 # jvm and dyn are lists of flags
  nohup "$JAVA" $jvm "${JAVA_17_OPTS[@]}" -XX:+UseG1GC \
    -Dlog.file="$LOG_DIR/$name.log" \
    -Dlog4j.configuration="file:$CONF_DIR/log4j.properties" \
    -Dlog4j.configurationFile="file:$CONF_DIR/log4j.properties" \
    -classpath "$LIB_DIR/*" "$main" --configDir "$CONF_DIR" $dyn "$@" \
    </dev/null >"$LOG_DIR/$name.out" 2>&1 &
  echo $! >"$RUN_DIR/$name.pid"
}

# The arguments of an application cluster's JobManager, one a line (start-application.sh writes them): the
# same command at every start, as a Kubernetes Deployment restarts its JobManager pod.
APPLICATION_ARGS="$CLUSTER_DIR/conf/application.args"

start_jobmanager() {
  if pid="$(pid_of jobmanager)"; then log "JobManager already running (pid $pid)"; return 0; fi
  if [[ -f "$APPLICATION_ARGS" ]]; then
    local args
    mapfile -t args <"$APPLICATION_ARGS"
    # Flink finds the job jar in usrlib/ next to the folder of $FLINK_LIB_DIR: $CLUSTER_DIR/usrlib.
    FLINK_LIB_DIR="$CLUSTER_DIR/lib" launch jobmanager \
      org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint "${args[@]}"
  else
    launch jobmanager org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint
  fi
  log "JobManager started (pid $(cat "$RUN_DIR/jobmanager.pid")), log $LOG_DIR/jobmanager.log"
}

# zookeeper_answers HOST:PORT: whether a ZooKeeper server answers there (its four-letter word srvr is allowed
# by default).
zookeeper_answers() {
  local host="${1%:*}" port="${1##*:}" reply
  reply="$( (exec 3<>"/dev/tcp/$host/$port" && printf srvr >&3 && timeout 3 cat <&3) 2>/dev/null || true)"
  [[ "$reply" == *"Zookeeper version"* ]]
}

start_taskmanager() { # start_taskmanager N
  local n="$1" pid
  if pid="$(pid_of "taskmanager-$n")"; then log "TaskManager $n already running (pid $pid)"; return 0; fi
  launch "taskmanager-$n" org.apache.flink.runtime.taskexecutor.TaskManagerRunner -D "taskmanager.resource-id=tm-$n"
  log "TaskManager $n started (pid $(cat "$RUN_DIR/taskmanager-$n.pid")), log $LOG_DIR/taskmanager-$n.log"
}

# kill_process NAME SIGNAL: signal the process of run/NAME.pid (only that pid); KILL also drops the pid file.
kill_process() {
  local name="$1" sig="$2" pid
  pid="$(pid_of "$name")" || { log "$name is not running"; rm -f "$RUN_DIR/$name.pid"; return 0; }
  kill "-$sig" "$pid" 2>/dev/null || true
  if [[ "$sig" == KILL || "$sig" == 9 ]]; then
    for _ in $(seq 1 50); do pid_alive "$pid" || break; sleep 0.1; done
    rm -f "$RUN_DIR/$name.pid"
    log "$name (pid $pid) killed"
  fi
}

# stop_process NAME: TERM, up to 20 s for a clean exit, then KILL.
stop_process() {
  local name="$1" pid
  pid="$(pid_of "$name")" || { rm -f "$RUN_DIR/$name.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do pid_alive "$pid" || break; sleep 0.1; done
  if pid_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; sleep 0.2; fi
  rm -f "$RUN_DIR/$name.pid"
  log "$name (pid $pid) stopped"
}

# metrics_port NAME: the port the Prometheus reporter of process NAME serves on (from its log).
metrics_port() {
  local port
  port="$(sed -n 's/.*Started PrometheusReporter HTTP server on port \([0-9]*\).*/\1/p' "$LOG_DIR/$1.log" 2>/dev/null | tail -n 1)"
  [[ -n "$port" ]] && echo "$port"
}

rest_get() { curl -fsS --max-time 3 "$(rest_url)$1" 2>/dev/null; }

# wait_rest SECONDS: until the JobManager's REST API answers.
wait_rest() {
  local deadline=$((SECONDS + $1))
  while ((SECONDS < deadline)); do
    rest_get /overview >/dev/null && return 0
    pid_of jobmanager >/dev/null || die "the JobManager exited; see $LOG_DIR/jobmanager.log and jobmanager.out"
    sleep 0.3
  done
  die "the REST API at $(rest_url) did not answer within $1 s; see $LOG_DIR/jobmanager.log"
}

# start_processes TASKMANAGERS SLOTS: the JobManager, then TASKMANAGERS TaskManagers, waiting until each is
# registered; a failure on the way stops whatever was started (stop.sh, at the script's exit).
start_processes() {
  started=0
  trap 'if ((started == 0)); then log "start failed; stopping what was started"; "$HERE/stop.sh" >&2 || true; fi' EXIT
  start_jobmanager
  wait_rest 90
  local ids=() n
  for n in $(seq 1 "$1"); do
    start_taskmanager "$n"
    ids+=("tm-$n")
  done
  wait_taskmanagers 120 "${ids[@]}"
  started=1
  log "$1 TaskManager(s) with $2 slots each registered"
}

registered_taskmanagers() { # the ids of the TaskManagers registered at the JobManager, one a line
  rest_get /taskmanagers | python3 -c 'import json,sys; [print(t["id"]) for t in json.load(sys.stdin)["taskmanagers"]]' 2>/dev/null
}

# wait_taskmanagers SECONDS ID...: until every given TaskManager id is registered.
wait_taskmanagers() {
  local deadline=$((SECONDS + $1)) ids; shift
  while ((SECONDS < deadline)); do
    # the REST API may not answer yet (a JobManager restarting): wait on, do not fail
    ids="$(registered_taskmanagers || true)"
    local missing=0
    for id in "$@"; do grep -qx "$id" <<<"$ids" || missing=1; done
    ((missing == 0)) && return 0
    sleep 0.3
  done
  die "TaskManagers $* not all registered within the time; registered: $( (registered_taskmanagers || true) | tr '\n' ' ')"
}
