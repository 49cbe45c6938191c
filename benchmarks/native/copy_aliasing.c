/*
 * Copy bandwidth when source and destination differ by exactly the pool size (as two equal-sized
 * pools mapped next to each other do) against the same copy with the destination moved a few
 * pages: both in one process, alternating pass by pass so that both see the same machine.
 *
 *   gcc -O2 -o copy_aliasing copy_aliasing.c && ./copy_aliasing [block] [pool] [skew] [passes]
 *
 * defaults: 32 KiB blocks through a 256 MiB pool, skew 8 KiB, 16 timed passes each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* copies the pool block by block, returns GB/s */
static double pass(char *destination, const char *source, size_t pool, size_t block)
{
    double start = now();
    for (size_t offset = 0; offset < pool; offset += block) {
        memcpy(destination + offset, source + offset, block);
    }
    return pool / (now() - start) / 1e9;
}

int main(int argc, char **argv)
{
    size_t block = argc > 1 ? strtoull(argv[1], NULL, 0) : 32768;
    size_t pool = argc > 2 ? strtoull(argv[2], NULL, 0) : 256UL << 20;
    size_t skew = argc > 3 ? strtoull(argv[3], NULL, 0) : 8192;
    int passes = argc > 4 ? atoi(argv[4]) : 16;
    if (block == 0 || pool % block != 0 || skew % 4096 != 0 || passes < 1) {
        fprintf(stderr, "block must divide pool, skew must be whole pages, passes at least 1\n");
        return 2;
    }
    /* source pool, then the destination pool right after it, plus room to move it by skew */
    char *source = mmap(NULL, 2 * pool + skew, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (source == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    char *aligned = source + pool;
    char *skewed = aligned + skew;
    memset(source, 0xab, 2 * pool + skew);
    double sums[2] = {0, 0};
    for (int r = -2; r < passes; r++) {            /* two untimed passes each */
        double a = pass(aligned, source, pool, block);
        double b = pass(skewed, source, pool, block);
        if (r >= 0) {
            sums[0] += a;
            sums[1] += b;
        }
    }
    printf("block=%zu pool=%zu: destination - source = pool: %.2f GB/s; = pool + %zu: %.2f GB/s; ratio %.3f\n",
           block, pool, sums[0] / passes, skew, sums[1] / passes, sums[1] / sums[0]);
    return 0;
}
