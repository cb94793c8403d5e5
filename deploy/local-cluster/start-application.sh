#!/usr/bin/env bash
# Starts a Flink application cluster on this machine with ZooKeeper HA, as the Flink Kubernetes Operator runs
# one (application mode): a JobManager (StandaloneApplicationClusterEntryPoint) that runs the job's main()
# itself at every start, the job jar in usrlib/, and N TaskManagers (TaskManagerRunner), each its own JVM.
#
#   deploy/local-cluster/start-application.sh --zookeeper HOST:PORT [options] -- [job arguments]
#
#   --zookeeper H:P      the ZooKeeper of high-availability.zookeeper.quorum (deploy/local-cluster/zookeeper.sh)
#   --jar PATH           the job jar (default job/target/rollcount-job.jar), copied to usrlib/
#   --from-savepoint P   start the job from savepoint P (execution.savepoint.path, the operator's
#                        initialSavepointPath)
#   --cluster-id ID      high-availability.cluster-id (default: rollcount- and the folder's name)
#   --taskmanagers N     TaskManagers to start (default 2), 1536m and S slots each
#   --slots S            slots per TaskManager (default 2)
#   --rest-port P        REST API / web UI port on 127.0.0.1 (default 8081; 0: a free port)
#
# The cluster's folder is $ROLLCOUNT_CLUSTER_DIR (default .rollcount/cluster), as for start.sh, with ha/ (the
# HA storage directory) and usrlib/. deploy/local-cluster/jobmanager.sh start starts a JobManager again with the
# same command: with HA it recovers the running job from its latest checkpoint and runs main() again, whose
# job graph Flink then ignores. The cluster shuts down when the job ends (stop with a savepoint: REST
# POST /jobs/<id>/stop); deploy/local-cluster/stop.sh stops what is left. Prints the REST address once every
# TaskManager is registered.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

zookeeper=
jar="$REPO/job/target/rollcount-job.jar"
savepoint=
cluster_id="rollcount-$(basename "$CLUSTER_DIR")"
taskmanagers=2
slots=2
rest_port=8081
while (($#)); do
  case "$1" in
    --zookeeper) zookeeper="$2"; shift 2 ;;
    --jar) jar="$2"; shift 2 ;;
    --from-savepoint) savepoint="$2"; shift 2 ;;
    --cluster-id) cluster_id="$2"; shift 2 ;;
    --taskmanagers) taskmanagers="$2"; shift 2 ;;
    --slots) slots="$2"; shift 2 ;;
    --rest-port) rest_port="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help; the job's arguments follow --)" ;;
  esac
done
[[ "$zookeeper" =~ ^[^:]+:[0-9]+$ ]] || die "--zookeeper HOST:PORT is required (deploy/local-cluster/zookeeper.sh start runs one)"
[[ -f "$jar" ]] || die "no job jar at $jar: build it with mvn -B package (or give --jar)"
[[ "$taskmanagers" =~ ^[1-9][0-9]*$ ]] || die "--taskmanagers must be a positive number"
[[ "$slots" =~ ^[1-9][0-9]*$ ]] || die "--slots must be a positive number"
[[ "$rest_port" =~ ^[0-9]+$ ]] || die "--rest-port must be a port number"
zookeeper_answers "$zookeeper" \
  || die "no ZooKeeper answers at $zookeeper (--zookeeper, high-availability.zookeeper.quorum): start one with deploy/local-cluster/zookeeper.sh start"

if pid="$(pid_of jobmanager)"; then
  die "a cluster is already running in $CLUSTER_DIR (JobManager pid $pid, $(rest_url)); stop it with deploy/local-cluster/stop.sh"
fi

ensure_lib
((rest_port == 0)) && rest_port="$(free_port)"
if (echo >"/dev/tcp/127.0.0.1/$rest_port") 2>/dev/null; then die "port $rest_port on 127.0.0.1 is in use: choose another with --rest-port"; fi
rpc_port="$(free_port)"

write_conf "$rest_port" "$rpc_port" "$slots" 0 "an application cluster with ZooKeeper HA"
mkdir -p "$CLUSTER_DIR/ha" "$CLUSTER_DIR/usrlib"
cat >>"$CONF_DIR/config.yaml" <<YAML

# ZooKeeper HA: leader election and the pointers to the job graph and the latest checkpoints in ZooKeeper,
# the job graph and checkpoint metadata in high-availability.storageDir.
high-availability.type: zookeeper
high-availability.zookeeper.quorum: $zookeeper
high-availability.zookeeper.path.root: /rollcount
high-availability.cluster-id: $cluster_id
high-availability.storageDir: file://$CLUSTER_DIR/ha
# A killed JobManager's leadership ends with its ZooKeeper session: seconds, not Flink's default minute.
high-availability.zookeeper.client.session-timeout: 6 s
high-availability.zookeeper.client.connection-timeout: 5 s
# A ZooKeeper without SASL: the client does not try it.
zookeeper.sasl.disable: true
YAML
if [[ -n "$savepoint" ]]; then
  echo "execution.savepoint.path: $savepoint" >>"$CONF_DIR/config.yaml"
fi
# The jar as an image holds it: a copy, so that a rebuild of job/target does not change a running cluster.
cp "$jar" "$CLUSTER_DIR/usrlib/rollcount-job.jar"
printf '%s\n' --job-classname io.rollcount.job.RollcountJob "$@" >"$APPLICATION_ARGS"

start_processes "$taskmanagers" "$slots"
echo "Flink application cluster running: REST $(rest_url) (folder $CLUSTER_DIR, HA $zookeeper $cluster_id)"
