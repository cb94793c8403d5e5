#!/usr/bin/env bash
# Benchmarks of the sketches against Apache DataSketches 6.2.0 and a HashMap (JMH), printing the
# RESULT lines of shared/BENCHMARKS.md. Usage: sketches/bench.sh [--quick] [--only REGEX]
# (also: ./rollcount bench sketches [args]). Takes about 3 minutes on 2 cores.
set -euo pipefail
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$DIR")"
CP_FILE="$DIR/target/bench-classpath.txt"
build() {
  (cd "$ROOT" && mvn -B -q "$@" -pl sketches test-compile dependency:build-classpath \
    -Dmdep.includeScope=test -Dmdep.outputFile="$CP_FILE") >&2
}
echo "bench: building sketches and its benchmarks ..." >&2
build -o || build   # offline first; fetch what is missing otherwise
exec java -Xmx2g -XX:+UseParallelGC -cp "$DIR/target/test-classes:$DIR/target/classes:$(cat "$CP_FILE")" \
  io.rollcount.sketches.bench.SketchBench "$@"
