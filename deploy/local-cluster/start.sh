#!/usr/bin/env bash
# Starts a Flink session cluster on this machine: one JobManager (StandaloneSessionClusterEntrypoint) and
# N TaskManagers (TaskManagerRunner), each its own background JVM, from Flink's Maven artifacts.
#
#   deploy/local-cluster/start.sh [--taskmanagers N] [--slots S] [--rest-port P] [--metrics-ports A-B]
#
#   --taskmanagers N   TaskManagers to start (default 2), 1536m and S slots each
#   --slots S          slots per TaskManager (default 2)
#   --rest-port P      REST API / web UI port on 127.0.0.1 (default 8081; 0: a free port)
#   --metrics-ports R  Prometheus metrics: each process serves http://HOST:PORT/metrics on the first free
#                      port of range R (default 9249-9259, Flink's usual one; 0: no metrics)
#   --conf KEY=VALUE   one more line 'KEY: VALUE' of config.yaml, after the others (repeatable), e.g.
#                      --conf execution.checkpointing.interval=3s
#
# The cluster's folder is $ROLLCOUNT_CLUSTER_DIR (default .rollcount/cluster): conf/config.yaml, log/,
# run/*.pid, checkpoints/, savepoints/, tmp/. Flink's jars are assembled once into
# deploy/local-cluster/target/lib. Prints the REST address once every TaskManager is registered.
# Stop it with deploy/local-cluster/stop.sh; submit with deploy/local-cluster/flink run ...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

taskmanagers=2
slots=2
rest_port=8081
metrics_ports=9249-9259
extra_conf=()
while (($#)); do
  case "$1" in
    --taskmanagers) taskmanagers="$2"; shift 2 ;;
    --slots) slots="$2"; shift 2 ;;
    --rest-port) rest_port="$2"; shift 2 ;;
    --metrics-ports) metrics_ports="$2"; shift 2 ;;
    --conf)
      [[ "${2:-}" =~ ^[A-Za-z0-9._-]+=.+$ ]] || die "--conf takes KEY=VALUE, e.g. execution.checkpointing.interval=3s"
      extra_conf+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ "$taskmanagers" =~ ^[1-9][0-9]*$ ]] || die "--taskmanagers must be a positive number"
[[ "$slots" =~ ^[1-9][0-9]*$ ]] || die "--slots must be a positive number"
[[ "$rest_port" =~ ^[0-9]+$ ]] || die "--rest-port must be a port number"
[[ "$metrics_ports" == 0 || "$metrics_ports" =~ ^[1-9][0-9]*(-[1-9][0-9]*)?$ ]] \
  || die "--metrics-ports must be a port, a range such as 9249-9259, or 0, not '$metrics_ports'"

if pid="$(pid_of jobmanager)"; then
  die "a cluster is already running in $CLUSTER_DIR (JobManager pid $pid, $(rest_url)); stop it with deploy/local-cluster/stop.sh"
fi
for f in "$RUN_DIR"/taskmanager-*.pid; do
  [[ -e "$f" ]] || continue
  name="$(basename "$f" .pid)"
  pid_of "$name" >/dev/null && die "$name of an earlier cluster is still running; stop it with deploy/local-cluster/stop.sh"
  rm -f "$f"
done

ensure_lib
((rest_port == 0)) && rest_port="$(free_port)"
if (echo >"/dev/tcp/127.0.0.1/$rest_port") 2>/dev/null; then die "port $rest_port on 127.0.0.1 is in use: choose another with --rest-port"; fi
rpc_port="$(free_port)"

rm -f "$APPLICATION_ARGS"
write_conf "$rest_port" "$rpc_port" "$slots" "$metrics_ports" "a session cluster"
if ((${#extra_conf[@]})); then
  printf '\n# --conf of start.sh\n' >>"$CONF_DIR/config.yaml"
  for kv in "${extra_conf[@]}"; do printf '%s: %s\n' "${kv%%=*}" "${kv#*=}" >>"$CONF_DIR/config.yaml"; done
fi

start_processes "$taskmanagers" "$slots"
if [[ "$metrics_ports" != 0 ]]; then
  ports=()
  for name in jobmanager $(for n in $(seq 1 "$taskmanagers"); do echo "taskmanager-$n"; done); do
    ports+=("$name:$(metrics_port "$name" || echo '?')")
  done
  echo "Prometheus metrics: ${ports[*]} (http://127.0.0.1:PORT/metrics)"
fi
echo "Flink cluster running: REST $(rest_url) (folder $CLUSTER_DIR)"
