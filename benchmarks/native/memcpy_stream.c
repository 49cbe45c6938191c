/* Single-thread memcpy streaming through 1 GiB in fixed-size chunks: the baseline for the local
 * transport's WRITE throughput. Two distinct 1 GiB buffers, pages faulted in first, best of 5.
 * Usage: memcpy_stream [chunk_bytes ...]   (default 32768) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define STREAM_BYTES (1UL << 30)

static double seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    unsigned char *source = mmap(NULL, STREAM_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *destination = mmap(NULL, STREAM_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (source == MAP_FAILED || destination == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(source, 1, STREAM_BYTES);
    memset(destination, 2, STREAM_BYTES);
    int first = argc > 1 ? 1 : 0;
    for (int arg = first; arg < (argc > 1 ? argc : 1); arg++) {
        size_t chunk = argc > 1 ? strtoul(argv[arg], NULL, 10) : 32768;
        if (chunk == 0 || STREAM_BYTES % chunk != 0) {
            fprintf(stderr, "chunk %zu must divide 1 GiB\n", chunk);
            return 1;
        }
        double best = 1e30;
        for (int round = 0; round < 5; round++) {
            double start = seconds();
            for (size_t offset = 0; offset < STREAM_BYTES; offset += chunk) {
                memcpy(destination + offset, source + offset, chunk);
            }
            double elapsed = seconds() - start;
            __asm__ volatile("" ::: "memory");
            if (elapsed < best) {
                best = elapsed;
            }
        }
        printf("memcpy chunk=%zu best-of-5 %.3f ms per GiB = %.2f GB/s\n", chunk, best * 1e3, STREAM_BYTES / best / 1e9);
    }
    return destination[12345] == 1 ? 0 : 2;
}
