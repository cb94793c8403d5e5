#!/usr/bin/env bash
# One TaskManager of the local cluster (number N, resource id tm-N), for fault tests and operations:
#   deploy/local-cluster/taskmanager.sh start N   start it and wait until it is registered
#   deploy/local-cluster/taskmanager.sh kill N    kill -9 it
#   deploy/local-cluster/taskmanager.sh stop N    stop it (TERM, then KILL after 20 s)
#   deploy/local-cluster/taskmanager.sh pid N     print its pid (exit 1 if it is not running)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
require_conf
n="${2:-}"
[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "usage: taskmanager.sh start|kill|stop|pid N"
case "${1:-}" in
  start)
    pid_of jobmanager >/dev/null || die "the JobManager is not running: start it first"
    start_taskmanager "$n"; wait_taskmanagers 120 "tm-$n"; echo "TaskManager tm-$n registered" ;;
  kill) kill_process "taskmanager-$n" KILL ;;
  stop) stop_process "taskmanager-$n" ;;
  pid) pid_of "taskmanager-$n" ;;
  *) die "usage: taskmanager.sh start|kill|stop|pid N" ;;
esac
