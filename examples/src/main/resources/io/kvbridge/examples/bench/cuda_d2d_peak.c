/*
 * cuda_d2d_peak.c - the device-to-device copy peak the cuda-ipc transport is measured against: one
 * process, the CUDA driver API only, cuMemcpyAsync of whole blocks between two cuMemAlloc buffers on
 * one non-blocking stream, timed as the transport's bench times a stream of transfers: wall clock
 * from the first copy queued to the event after the last one reached (polled with cuEventQuery).
 * One untimed pass, then the best of 5 timed; the destination is checked against the source after
 * the last pass. It calls only driver functions the cuda-ipc binding calls, so it also runs against
 * kvbridge's fake libcuda.so.1 (LD_LIBRARY_PATH), whose figures are not GPU figures.
 * Prints one line per block size:
 *   cuda_d2d_peak block=N total=T copies=M best X GB/s
 * Build: gcc -O2 -I/usr/local/cuda/include -o cuda_d2d_peak cuda_d2d_peak.c -L/usr/local/cuda/lib64/stubs -lcuda
 * Run:   ./cuda_d2d_peak DEVICE TOTAL_BYTES BLOCK_BYTES...
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call) do { CUresult rc_ = (call); if (rc_ != CUDA_SUCCESS) { const char *n_ = "?"; cuGetErrorName(rc_, &n_); \
    fprintf(stderr, "cuda_d2d_peak: %s returned %d (%s)\n", #call, (int) rc_, n_); return 1; } } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + t.tv_nsec / 1e9;
}

/* waits for an event by polling, as the transport's owner thread does; 60 s at most */
static CUresult await(CUevent event)
{
    double deadline = now() + 60;
    CUresult rc;
    while ((rc = cuEventQuery(event)) == CUDA_ERROR_NOT_READY) {
        if (now() > deadline) return CUDA_ERROR_LAUNCH_TIMEOUT;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: cuda_d2d_peak DEVICE TOTAL_BYTES BLOCK_BYTES...\n");
        return 2;
    }
    int ordinal = atoi(argv[1]);
    size_t total = strtoull(argv[2], NULL, 10);
    CUdevice device;
    CUcontext context;
    CUstream stream;
    CUevent done;
    CUdeviceptr src, dst;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, ordinal));
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&done, CU_EVENT_DEFAULT));
    CHECK(cuMemAlloc(&src, total));
    CHECK(cuMemAlloc(&dst, total));
    unsigned char *host = malloc(total);
    unsigned char *back = malloc(total);
    if (host == NULL || back == NULL) {
        fprintf(stderr, "cuda_d2d_peak: cannot allocate %zu host bytes\n", total);
        return 1;
    }
    for (size_t i = 0; i < total; i++) host[i] = (unsigned char) (i * 131 + (i >> 12));
    CHECK(cuMemcpyAsync(src, (CUdeviceptr) host, total, stream));
    CHECK(cuEventRecord(done, stream));
    CHECK(await(done));
    for (int a = 3; a < argc; a++) {
        size_t block = strtoull(argv[a], NULL, 10);
        if (block == 0 || total % block != 0) {
            fprintf(stderr, "cuda_d2d_peak: block %zu does not divide total %zu\n", block, total);
            return 2;
        }
        size_t blocks = total / block;
        double best = 1e30;
        for (int pass = 0; pass < 6; pass++) {
            double start = now();
            for (size_t b = 0; b < blocks; b++) {
                CHECK(cuMemcpyAsync(dst + b * block, src + b * block, block, stream));
            }
            CHECK(cuEventRecord(done, stream));
            CHECK(await(done));
            double elapsed = now() - start;
            if (pass > 0 && elapsed < best) best = elapsed;
        }
        memset(back, 0, total);
        CHECK(cuMemcpyAsync((CUdeviceptr) back, dst, total, stream));
        CHECK(cuEventRecord(done, stream));
        CHECK(await(done));
        if (memcmp(back, host, total) != 0) {
            fprintf(stderr, "cuda_d2d_peak: block %zu: the destination differs from the source\n", block);
            return 1;
        }
        printf("cuda_d2d_peak block=%zu total=%zu copies=%zu best %.3f GB/s\n", block, total, blocks, (double) total / best / 1e9);
        fflush(stdout);
    }
    CHECK(cuMemFree(dst));
    CHECK(cuMemFree(src));
    CHECK(cuEventDestroy(done));
    CHECK(cuStreamDestroy(stream));
    CHECK(cuDevicePrimaryCtxRelease(device));
    free(host);
    free(back);
    return 0;
}
