#!/usr/bin/env bash
# Builds what benchmarks/bin/gpu-check.sh needs on a GPU machine that may have no JDK or Maven:
# dist/gpu/runtime (a jlink'ed Java runtime), dist/gpu/lib (the runtime jars of the command line),
# dist/gpu/test (the cuda-ipc test classes, the JUnit platform and the test dependencies the command
# line's jars do not already hold), and dist/gpu.tar.xz, all of it in one archive of about 41 MiB to
# carry to that machine (gpu-check.sh unpacks it when dist/gpu is absent). The runtime's modules are
# left uncompressed so that xz packs them: 71 MiB on disk, 16 MiB packed, where jlink's own
# compression left 48 MiB that packs no further. The bench's C baseline (cuda_d2d_peak.c) travels
# inside the command line's jar and is compiled on the GPU machine in the same run. dist/ is
# git-ignored.
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
mvn -B -q -pl backend-cuda-ipc -am -DskipTests package dependency:copy-dependencies -DincludeScope=test -DexcludeArtifactIds=assertj-core,byte-buddy -DoutputDirectory="$OUT/test/deps"
# the launcher that runs JUnit without Maven
mvn -B -q -pl backend-cuda-ipc dependency:copy -Dartifact=org.junit.platform:junit-platform-launcher:1.14.1 -DoutputDirectory="$OUT/test/deps"
# the test class path is test/deps then lib: a jar the command line already carries is not carried twice (assertj and
# byte-buddy, which only the JUnit test kit pulls in, are left out: nothing the check runs uses them)
for jar in "$OUT"/test/deps/*.jar; do
    if [[ -e "$OUT/lib/$(basename "$jar")" ]]; then
        rm "$jar"
    fi
done
"$JAVA_HOME/bin/jlink" --add-modules java.base,java.logging,java.management,java.naming,java.net.http,java.sql,jdk.unsupported,java.xml \
    --strip-debug --no-man-pages --no-header-files --compress=zip-0 --output "$OUT/runtime"
mkdir -p "$OUT/test/runner"
"$JAVA_HOME/bin/javac" -d "$OUT/test/runner" -cp "$OUT/test/deps/*:$OUT/lib/*" benchmarks/bin/GpuCheckRunner.java
rm -f "$ROOT/dist/gpu.tar.xz"
tar -C "$ROOT/dist" -cJf "$ROOT/dist/gpu.tar.xz" gpu
du -sh "$OUT/runtime" "$OUT/lib" "$OUT/test" "$ROOT/dist/gpu.tar.xz"
