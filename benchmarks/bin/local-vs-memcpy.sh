#!/usr/bin/env bash
# Measures local WRITE throughput (JMH) and single-thread memcpy (C) in one run, same machine,
# same 1 GiB stream of 32 KiB blocks, and prints the ratios.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT_DIR:-$ROOT/benchmarks/target/results}"
mkdir -p "$OUT"
JAVA="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"

gcc -O2 -o "$OUT/memcpy_stream" "$ROOT/examples/src/main/resources/io/kvbridge/examples/bench/memcpy_stream.c"
"$OUT/memcpy_stream" 32768 | tee "$OUT/memcpy.txt"
"$JAVA" --enable-native-access=ALL-UNNAMED -jar "$ROOT/benchmarks/target/benchmarks.jar" LocalTransportBenchmark \
    -rf json -rff "$OUT/local.json" | tee "$OUT/local.txt" | grep -E "^Benchmark|writeOneGibibyte"
"$OUT/memcpy_stream" 32768 | tee -a "$OUT/memcpy.txt"

python3 - "$OUT/memcpy.txt" "$OUT/local.json" <<'PY'
import json, re, sys
memcpy = max(float(re.search(r"= ([0-9.]+) GB/s", line).group(1)) for line in open(sys.argv[1]))
print(f"memcpy (best of both runs): {memcpy:.2f} GB/s")
for result in json.load(open(sys.argv[2])):
    p = result["params"]
    ms = result["primaryMetric"]["score"]
    gbps = (1 << 30) / (ms / 1e3) / 1e9
    print(f"local copy-threads={p['copyThreads']} blocks/transfer={p['blocksPerTransfer']}: {gbps:.2f} GB/s = {gbps / memcpy:.2f} x memcpy")
PY
