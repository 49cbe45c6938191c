#!/usr/bin/env bash
# The cuda-ipc checks for a machine with an NVIDIA GPU and driver, run from what
# benchmarks/bin/make-gpu-dist.sh put under dist/gpu (no JDK or Maven needed), in well under 8 minutes:
#   1. the transport conformance suite on the real driver (CudaIpcRealDriverConformanceTest);
#   2. kvbridge demo --backend cuda-ipc --processes --requests 200;
#   3. the device-to-device copy peak of benchmarks/native/cuda_d2d_peak.c (needs gcc and cuda.h).
# Without a GPU it stops after the probe, naming the reason, and exits 3.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIST="${KVBRIDGE_GPU_DIST:-$ROOT/dist/gpu}"
JAVA="$DIST/runtime/bin/java"
OUT="${OUT:-$ROOT/dist/gpu-check-out}"
mkdir -p "$OUT"
[[ -x "$JAVA" ]] || { echo "gpu-check: no runtime at $DIST/runtime; run benchmarks/bin/make-gpu-dist.sh first" >&2; exit 4; }
JOPTS=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
CLI=(-cp "$DIST/lib/*" io.kvbridge.examples.cli.KvBridgeCli)
status=0

echo "== probe"
"$JAVA" "${JOPTS[@]}" "${CLI[@]}" plugins 2>&1 | tee "$OUT/plugins.txt"
if ! grep -qE '[[:space:]]cuda-ipc[[:space:]]+yes' "$OUT/plugins.txt"; then
    grep -i 'cuda' "$OUT/plugins.txt" | head -3
    echo "gpu-check: the cuda-ipc transport is not available here (reason above); nothing else runs" >&2
    exit 3
fi

echo "== conformance suite on the real driver"
timeout 240 "$JAVA" "${JOPTS[@]}" -cp "$DIST/test/classes:$DIST/test/deps/*:$DIST/test/runner" GpuCheckRunner \
    io.kvbridge.backend.cudaipc.CudaIpcRealDriverConformanceTest 2>&1 | tee "$OUT/conformance.txt"
[[ "${PIPESTATUS[0]}" == 0 ]] || status=1

echo "== demo, two processes"
timeout 180 "$JAVA" "${JOPTS[@]}" "${CLI[@]}" demo --backend cuda-ipc --processes --requests 200 --idle-seconds 1 2>&1 | tee "$OUT/demo.txt"
[[ "${PIPESTATUS[0]}" == 0 ]] || status=1

echo "== device-to-device peak (C baseline)"
if command -v gcc >/dev/null && [[ -f /usr/local/cuda/include/cuda.h ]]; then
    gcc -O2 -I/usr/local/cuda/include -o "$OUT/cuda_d2d_peak" "$DIST/native/cuda_d2d_peak.c" -lcuda \
        && timeout 60 "$OUT/cuda_d2d_peak" 0 1024 | tee "$OUT/d2d_peak.txt" || status=1
else
    echo "gpu-check: no gcc or /usr/local/cuda/include/cuda.h: the C baseline is skipped" | tee "$OUT/d2d_peak.txt"
fi
exit $status
