#!/usr/bin/env bash
# The cuda-ipc checks for a machine with an NVIDIA GPU and driver, run from what
# benchmarks/bin/make-gpu-dist.sh put under dist/gpu, or its archive dist/gpu.tar.xz (no JDK or Maven needed), in under 8 minutes
# (each step has its own limit: 150 + 150 + 150 s, 7.5 minutes together):
#   1. the transport conformance suite on the real driver in one process (CudaIpcRealDriverConformanceTest)
#      and with its target in a child JVM (CudaIpcRealDriverTwoProcessConformanceTest), and the
#      two-process test on legacy IPC and VMM exports (CudaIpcTwoProcessTest; the tests that steer the
#      fake driver skip, naming why);
#   2. kvbridge demo --backend cuda-ipc --processes --requests 200, both caches in device memory;
#   3. kvbridge bench: the cuda-ipc device rows against cuda_d2d_peak.c, compiled in the same run
#      (needs gcc and the CUDA toolkit's cuda.h; without them the bench says so and reports no ratio),
#      and the issue cost of one transfer of 5,120 descriptors.
# Without a GPU it stops after the probe, naming the reason, and exits 3.
# KVBRIDGE_JAVA_OPTS adds JVM options (for a dry run against the fake driver:
# -Dkvbridge.cuda-ipc.library=.../libcuda.so.1 -Dkvbridge.cuda-ipc.allow-fake=true).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIST="${KVBRIDGE_GPU_DIST:-$ROOT/dist/gpu}"
JAVA="$DIST/runtime/bin/java"
OUT="${OUT:-$ROOT/dist/gpu-check-out}"
mkdir -p "$OUT"
if [[ ! -x "$JAVA" && -z "${KVBRIDGE_GPU_DIST:-}" && -f "$ROOT/dist/gpu.tar.xz" ]]; then
    # what was carried here is the archive: unpack it once
    tar -C "$ROOT/dist" -xJf "$ROOT/dist/gpu.tar.xz" || { echo "gpu-check: cannot unpack $ROOT/dist/gpu.tar.xz" >&2; exit 4; }
fi
[[ -x "$JAVA" ]] || { echo "gpu-check: no runtime at $DIST/runtime; run benchmarks/bin/make-gpu-dist.sh first" >&2; exit 4; }
# shellcheck disable=SC2206
JOPTS=(--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow ${KVBRIDGE_JAVA_OPTS:-})
CLI=(-cp "$DIST/lib/*" io.kvbridge.examples.cli.KvBridgeCli)
status=0
started=$SECONDS

echo "== probe"
"$JAVA" "${JOPTS[@]}" "${CLI[@]}" plugins 2>&1 | tee "$OUT/plugins.txt"
if ! grep -qE '[[:space:]]cuda-ipc[[:space:]]+yes' "$OUT/plugins.txt"; then
    grep -i 'cuda' "$OUT/plugins.txt" | head -3
    echo "gpu-check: the cuda-ipc transport is not available here (reason above); nothing else runs" >&2
    exit 3
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L | tee "$OUT/gpus.txt"

echo "== conformance suite on the real driver, and two processes over legacy IPC and VMM exports"
timeout 150 "$JAVA" "${JOPTS[@]}" -cp "$DIST/test/classes:$DIST/test/deps/*:$DIST/lib/*:$DIST/test/runner" GpuCheckRunner \
    io.kvbridge.backend.cudaipc.CudaIpcRealDriverConformanceTest io.kvbridge.backend.cudaipc.CudaIpcRealDriverTwoProcessConformanceTest \
    io.kvbridge.backend.cudaipc.CudaIpcTwoProcessTest 2>&1 | tee "$OUT/conformance.txt"
[[ "${PIPESTATUS[0]}" == 0 ]] || status=1

echo "== demo, every producer stage and the decoder in a process of its own, caches in device memory"
timeout 150 "$JAVA" "${JOPTS[@]}" "${CLI[@]}" demo --backend cuda-ipc --processes --requests 200 --idle-seconds 1 2>&1 | tee "$OUT/demo.txt"
demo=${PIPESTATUS[0]}
if [[ "$demo" != 0 ]]; then
    echo "gpu-check: the demo failed with exit code $demo (124: it ran past its 150 s)" >&2
    status=1
elif ! grep -q 'cache bytes in device' "$OUT/demo.txt"; then
    echo "gpu-check: the demo's audit does not show device caches" >&2
    status=1
fi

echo "== bench: device rows against the same-run cuMemcpy baseline"
timeout 150 "$JAVA" "${JOPTS[@]}" "${CLI[@]}" bench --block-sizes 4KiB,64KiB,256KiB,1MiB,4MiB --total-bytes 256MiB 2>&1 | tee "$OUT/bench.txt"
bench=${PIPESTATUS[0]}
if [[ "$bench" != 0 ]]; then
    echo "gpu-check: the bench failed with exit code $bench (124: it ran past its 150 s)" >&2
    status=1
elif ! grep -q 'cuda-ipc dev' "$OUT/bench.txt"; then
    echo "gpu-check: the bench printed no cuda-ipc device rows" >&2
    status=1
fi

echo "gpu-check: done in $((SECONDS - started)) s, exit $status; outputs in $OUT"
exit $status
