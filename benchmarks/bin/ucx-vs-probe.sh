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
# SAME_CONFIG=1 adds a third column: the C baseline patched (a copy, in OUT_DIR) to run with the UCX
# settings the kvbridge transport uses (UCP_FEATURE_WAKEUP, peer error handling, MM_ERROR_HANDLING,
# 1 s keepalive), which separates what those settings cost from what the Java binding costs.
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
if [[ "${SAME_CONFIG:-0}" == 1 ]]; then
  sed -e 's/pp.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_TAG;/pp.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;/' \
      -e 's/ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS; ep.address = raddr;/ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE; ep.address = raddr; ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;/' \
      "$UCP_PROBE_C" > "$OUT/ucp_probe_same_config.c"
  grep -q 'UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;' "$OUT/ucp_probe_same_config.c" && grep -q 'ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;' "$OUT/ucp_probe_same_config.c" \
      || { echo "patching ucp_probe.c failed" >&2; exit 1; }
  gcc -O2 -o "$OUT/ucp_probe_same_config" "$OUT/ucp_probe_same_config.c" -lucp -lucs
fi

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
          same=""
          if [[ "${SAME_CONFIG:-0}" == 1 ]]; then
            mm=$([[ "$tls" == sm ]] && echo y || echo n)
            same=" c_same_config=$(UCX_TLS="$tls" UCX_NET_DEVICES="$devices" PROBE_ALLOC="$alloc" UCX_MM_ERROR_HANDLING="$mm" UCX_KEEPALIVE_INTERVAL=1000ms \
                timeout 300 "$OUT/ucp_probe_same_config" "$op" "$block" "$SPAN" "$SPAN" 2>/dev/null | grep -o 'avg [0-9.]* GB/s' | awk '{print $2}' || echo fail)"
          fi
          echo "round=$round tls=$tls memory=$memory op=$op block=$block c=$c java=$j$same" | tee -a "$RAW"
        done
      done
    done
  done
done

python3 - "$RAW" <<'PY'
import re, statistics, sys
runs = {}
same = False
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split())
    key = (f["tls"], f["memory"], f["op"], int(f["block"]))
    c, j, s = runs.setdefault(key, ([], [], []))
    for column, values in (("c", c), ("java", j), ("c_same_config", s)):
        if f.get(column, "fail") != "fail":
            values.append(float(f[column]))
    same = same or "c_same_config" in f
fmt = lambda xs: " / ".join(f"{x:.2f}" for x in xs) or "fail"
ratio = lambda a, b: statistics.median(a) / statistics.median(b) if a and b else float("nan")
print("| tls | memory | op | block | C GB/s (runs) | Java GB/s (runs) | Java/C (medians) |" + (" C, kvbridge's UCX settings | Java/that |" if same else ""))
print("|---|---|---|---|---|---|---|" + ("---|---|" if same else ""))
for (tls, memory, op, block), (c, j, s) in sorted(runs.items()):
    extra = f" {fmt(s)} | {ratio(j, s):.2f} |" if same else ""
    print(f"| {tls} | {memory} | {op} | {block // 1024} KiB | {fmt(c)} | {fmt(j)} | {ratio(j, c):.2f} |" + extra)
PY
