#!/usr/bin/env bash
# Stops every process of the local cluster (the pids in its run/ folder): TaskManagers, then the JobManager.
# Jobs still running are not cancelled first: their retained checkpoints stay in checkpoints/. Logs stay
# in log/; the processes' working folder tmp/ is removed.
#   deploy/local-cluster/stop.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
shopt -s nullglob
for f in "$RUN_DIR"/taskmanager-*.pid; do stop_process "$(basename "$f" .pid)" & done
wait
stop_process jobmanager
# The processes' working folders (RocksDB instances, blob caches): nothing in them outlives the processes.
rm -rf "$CLUSTER_DIR/tmp"
echo "Flink cluster in $CLUSTER_DIR stopped"
