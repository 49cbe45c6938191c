#!/usr/bin/env bash
# Builds what benchmarks/bin/gpu-check.sh needs on a GPU machine that may have no JDK or Maven:
# dist/gpu/runtime (a jlink'ed Java runtime, about 40 MiB), dist/gpu/lib (the runtime jars of the
# command line), dist/gpu/test (the cuda-ipc test classes, the JUnit platform and their
# dependencies). The bench's C baseline (cuda_d2d_peak.c) travels inside the command line's jar and is
# compiled on the GPU machine in the same run. dist/ is git-ignored.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$ROOT/dist/gpu"
: "${JAVA_HOME:?set JAVA_HOME to a JDK 25}"
cd "$ROOT"
mvn -B -q -DskipTests package
rm -rf "$OUT" && mkdir -p "$OUT/lib" "$OUT/test"
cp examples/target/lib/*.jar "$OUT/lib/"
# target/lib holds the command line's dependencies; its own jar sits next to it
cp examples/target/kvbridge-examples-*.jar "$OUT/lib/"
cp -r backend-cuda-ipc/target/test-classes "$OUT/test/classes"
# in the reactor (-am), so that kvbridge's own jars come from this build, never from whatever ~/.m2 holds
mvn -B -q -pl backend-cuda-ipc -am -DskipTests package dependency:copy-dependencies -DincludeScope=test -DoutputDirectory="$OUT/test/deps"
# the launcher that runs JUnit without Maven
mvn -B -q -pl backend-cuda-ipc dependency:copy -Dartifact=org.junit.platform:junit-platform-launcher:1.14.1 -DoutputDirectory="$OUT/test/deps"
cp backend-cuda-ipc/target/kvbridge-backend-cuda-ipc-*.jar "$OUT/test/deps/"
"$JAVA_HOME/bin/jlink" --add-modules java.base,java.logging,java.management,java.naming,java.net.http,java.sql,jdk.unsupported,java.xml,java.desktop \
    --strip-debug --no-man-pages --no-header-files --compress=zip-6 --output "$OUT/runtime"
du -sh "$OUT/runtime" "$OUT"
mkdir -p "$OUT/test/runner"
"$JAVA_HOME/bin/javac" -d "$OUT/test/runner" -cp "$OUT/test/deps/*" benchmarks/bin/GpuCheckRunner.java
