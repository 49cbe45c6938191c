/* Single-thread memcpy streaming through a fixed total (1 GiB unless --total=BYTES comes first) in
 * fixed-size chunks: the baseline for the transports' WRITE throughput. Two distinct buffers of the
 * total, pages faulted in first, best of 5. The time is printed per GiB whatever the total, so lines
 * from different totals compare directly.
 * Usage: memcpy_stream [--total=BYTES] [chunk_bytes ...]   (default 32768) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define GIB (1UL << 30)

static double seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t streamBytes = GIB;
    if (argc > 1 && strncmp(argv[1], "--total=", 8) == 0) {
        streamBytes = strtoul(argv[1] + 8, NULL, 10);
        if (streamBytes == 0) {
            fprintf(stderr, "total %s must be a positive number of bytes\n", argv[1] + 8);
            return 1;
        }
        argv++;
        argc--;
    }
    unsigned char *source = mmap(NULL, streamBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *destination = mmap(NULL, streamBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (source == MAP_FAILED || destination == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(source, 1, streamBytes);
    memset(destination, 2, streamBytes);
    int first = argc > 1 ? 1 : 0;
    for (int arg = first; arg < (argc > 1 ? argc : 1); arg++) {
        size_t chunk = argc > 1 ? strtoul(argv[arg], NULL, 10) : 32768;
        if (chunk == 0 || streamBytes % chunk != 0) {
            fprintf(stderr, "chunk %zu must divide the total %zu\n", chunk, streamBytes);
            return 1;
        }
        double best = 1e30;
        for (int round = 0; round < 5; round++) {
            double start = seconds();
            for (size_t offset = 0; offset < streamBytes; offset += chunk) {
                memcpy(destination + offset, source + offset, chunk);
            }
            double elapsed = seconds() - start;
            __asm__ volatile("" ::: "memory");
            if (elapsed < best) {
                best = elapsed;
            }
        }
        printf("memcpy chunk=%zu best-of-5 %.3f ms per GiB = %.2f GB/s\n", chunk, best * 1e3 * GIB / streamBytes, streamBytes / best / 1e9);
    }
    return destination[streamBytes - 1] == 1 ? 0 : 2;
}
