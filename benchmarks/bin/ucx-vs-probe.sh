#!/usr/bin/env bash
# UCX put/get bandwidth between two processes: the C baseline ucp_probe.c and the kvbridge ucx
# transport (UcxTwoProcessStream, two JVMs), same parameters, interleaved in one run, then the
# Java/C ratio per configuration (median of the rounds on each side).
#
#   UCP_PROBE_C=/path/to/ucp_probe.c benchmarks/bin/ucx-vs-probe.sh [rounds]
#
# Needs: benchmarks/target/benchmarks.jar (mvn -pl benchmarks -am package -DskipTests), gcc and
# libucx-dev (headers for the C baseline). Env: TLS_LIST (default "sm tcp"), MEMORY_LIST ("ucx own"),
# OPS ("put get"), BLOCKS ("4096 32768 262144 4194304"), SPAN (268435456), OUT_DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT_DIR:-$ROOT/benchmarks/target/results}"
ROUNDS="${1:-2}"
SPAN="${SPAN:-268435456}"
JAVA="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
: "${UCP_PROBE_C:?set UCP_PROBE_C to the path of the C baseline ucp_probe.c}"
mkdir -p "$OUT"
RAW="$OUT/ucx-raw.txt"
: > "$RAW"

gcc -O2 -o "$OUT/ucp_probe" "$UCP_PROBE_C" -lucp -lucs

for round in $(seq 1 "$ROUNDS"); do
  for tls in ${TLS_LIST:-sm tcp}; do
    for memory in ${MEMORY_LIST:-ucx own}; do
      alloc=$([[ "$memory" == ucx ]] && echo 1 || echo 0)
      for op in ${OPS:-put get}; do
        for block in ${BLOCKS:-4096 32768 262144 4194304}; do
          devices=$([[ "$tls" == tcp ]] && echo lo || echo all)
          c=$(UCX_TLS="$tls" UCX_NET_DEVICES="$devices" PROBE_ALLOC="$alloc" timeout 300 \
                "$OUT/ucp_probe" "$op" "$block" "$SPAN" "$SPAN" 2>/dev/null | grep -o 'avg [0-9.]* GB/s' | awk '{print $2}' || echo fail)
          j=$(timeout 300 "$JAVA" --enable-native-access=ALL-UNNAMED -cp "$ROOT/benchmarks/target/benchmarks.jar" \
                io.kvbridge.benchmarks.UcxTwoProcessStream "$op" "$block" "$SPAN" "$SPAN" "$tls" "$memory" 2>/dev/null \
                | grep -o 'avg [0-9.]* GB/s' | awk '{print $2}' || echo fail)
          echo "round=$round tls=$tls memory=$memory op=$op block=$block c=$c java=$j" | tee -a "$RAW"
        done
      done
    done
  done
done

python3 - "$RAW" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split())
    key = (f["tls"], f["memory"], f["op"], int(f["block"]))
    c, j = runs.setdefault(key, ([], []))
    if f["c"] != "fail": c.append(float(f["c"]))
    if f["java"] != "fail": j.append(float(f["java"]))
print("| tls | memory | op | block | C GB/s (runs) | Java GB/s (runs) | Java/C (medians) |")
print("|---|---|---|---|---|---|---|")
for (tls, memory, op, block), (c, j) in sorted(runs.items()):
    ratio = statistics.median(j) / statistics.median(c) if c and j else float("nan")
    fmt = lambda xs: " / ".join(f"{x:.2f}" for x in xs) or "fail"
    print(f"| {tls} | {memory} | {op} | {block // 1024} KiB | {fmt(c)} | {fmt(j)} | {ratio:.2f} |")
PY
