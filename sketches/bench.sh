#!/usr/bin/env bash
# Benchmarks of the sketches against Apache DataSketches 6.2.0 and a HashMap (JMH), printing the
# RESULT lines of docs/benchmarks.md. Usage: sketches/bench.sh [--quick] [--only REGEX]
# (also: ./rollcount bench sketches [args]). Takes about 3 minutes on 2 cores.
set -euo pipefail
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$DIR")"
CP_FILE="$DIR/target/bench-classpath.txt"
usage="Usage: rollcount bench sketches [--quick] [--only REGEX]
  JMH benchmarks of the sketches (Redis-format HyperLogLog, trending Space-Saving) against Apache
  DataSketches and a HashMap; prints RESULT lines (docs/benchmarks.md). About 3 minutes on 2 cores.
  --quick        1 warm-up and 3 measured iterations instead of 3 and 5
  --only REGEX   only the JMH benchmarks whose name matches REGEX"
args=("$@")
while (($#)); do
  case "$1" in
    -h|--help) echo "$usage"; exit 0 ;;
    --quick) shift ;;
    --only) [[ $# -ge 2 ]] || { echo "rollcount: --only needs a REGEX" >&2; echo "try './rollcount bench sketches --help'" >&2; exit 2; }; shift 2 ;;
    *) echo "rollcount: unknown option '$1'" >&2; echo "try './rollcount bench sketches --help'" >&2; exit 2 ;;
  esac
done
set -- "${args[@]+"${args[@]}"}"
build() {
  (cd "$ROOT" && mvn -B -q "$@" -pl sketches test-compile dependency:build-classpath \
    -Dmdep.includeScope=test -Dmdep.outputFile="$CP_FILE") >&2
}
echo "bench: building sketches and its benchmarks ..." >&2
build -o || build   # offline first; fetch what is missing otherwise
exec java -Xmx2g -XX:+UseParallelGC -cp "$DIR/target/test-classes:$DIR/target/classes:$(cat "$CP_FILE")" \
  io.rollcount.sketches.bench.SketchBench "$@"
