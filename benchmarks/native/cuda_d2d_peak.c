/*
 * cuda_d2d_peak.c - the device-to-device copy peak the cuda-ipc transport is measured against: one
 * process, the CUDA driver API only, cuMemcpyAsync of whole blocks between two cuMemAlloc buffers on
 * one non-blocking stream, timed with events. Prints one line per block size:
 *   block_bytes=N blocks=M gbps=X
 * Build: gcc -O2 -I/usr/local/cuda/include -o cuda_d2d_peak cuda_d2d_peak.c -lcuda
 * Run:   ./cuda_d2d_peak [device] [total_mib]
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call) do { CUresult rc_ = (call); if (rc_ != CUDA_SUCCESS) { const char *n_ = "?"; cuGetErrorName(rc_, &n_); \
    fprintf(stderr, "%s returned %d (%s)\n", #call, (int) rc_, n_); return 1; } } while (0)

int main(int argc, char **argv)
{
    int ordinal = argc > 1 ? atoi(argv[1]) : 0;
    size_t total = (size_t) (argc > 2 ? atoi(argv[2]) : 1024) << 20;
    CUdevice device;
    CUcontext context;
    CUstream stream;
    CUevent start, stop;
    CUdeviceptr src, dst;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, ordinal));
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CHECK(cuMemAlloc(&src, total));
    CHECK(cuMemAlloc(&dst, total));
    CHECK(cuMemsetD8(src, 0x5a, total));
    size_t sizes[] = {4096, 16384, 65536, 262144, 1048576, 4194304};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t block = sizes[s];
        size_t blocks = total / block;
        float best = 1e30f;
        for (int round = 0; round < 5; round++) {
            CHECK(cuEventRecord(start, stream));
            for (size_t b = 0; b < blocks; b++) {
                CHECK(cuMemcpyAsync(dst + b * block, src + b * block, block, stream));
            }
            CHECK(cuEventRecord(stop, stream));
            CHECK(cuEventSynchronize(stop));
            float ms;
            CHECK(cuEventElapsedTime(&ms, start, stop));
            if (ms < best) best = ms;
        }
        printf("block_bytes=%zu blocks=%zu gbps=%.2f\n", block, blocks, (double) (blocks * block) / (best * 1e6));
    }
    cuMemFree(dst);
    cuMemFree(src);
    cuDevicePrimaryCtxRelease(device);
    return 0;
}
