#!/usr/bin/env bash
# The local cluster's JobManager alone (for fault tests and operations):
#   deploy/local-cluster/jobmanager.sh start   start it (with the cluster's config; an application cluster's
#                                              with the same command as start-application.sh) and wait for
#                                              its REST API
#   deploy/local-cluster/jobmanager.sh kill    kill -9 it
#   deploy/local-cluster/jobmanager.sh stop    stop it (TERM, then KILL after 20 s)
#   deploy/local-cluster/jobmanager.sh pid     print its pid (exit 1 if it is not running)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
require_conf
case "${1:-}" in
  start) start_jobmanager; wait_rest 90; echo "JobManager running: REST $(rest_url)" ;;
  kill) kill_process jobmanager KILL ;;
  stop) stop_process jobmanager ;;
  pid) pid_of jobmanager ;;
  *) die "usage: jobmanager.sh start|kill|stop|pid" ;;
esac
