/* NIXL bandwidth between two agents in one process, written against NIXL's C API alone
 * (libnixl_capi.so): the baseline `kvbridge bench` puts next to the nixl transport.
 *
 * Two agents (an initiator and a target), each with a UCX backend and one registered region of
 * TOTAL bytes; the target's metadata is loaded into the initiator. Per block size, both regions are
 * prepared as lists of TOTAL / BLOCK descriptors and one request names every block (merging off,
 * so NIXL issues one operation per block, as the transport's stream posts one block per transfer).
 * A pass posts that request once and polls it to completion; GB/s = TOTAL / (post to completion).
 * With --request-per-block a pass instead makes, posts, polls, releases and destroys one request per
 * block in turn, as the transport does for a stream of one-block transfers, so the difference
 * between the two modes is NIXL's own cost per request.
 * One untimed pass comes first, then BATCHES timed ones; the mean and the best are printed. The
 * destination is zeroed before each block size and compared with the source's pattern after it,
 * so lost bytes fail the run. UCX settings come from the environment (UCX_TLS, ...); run it with
 * UCX_ERROR_SIGNALS= as the JVM runs NIXL.
 *
 * Usage: nixl_probe write|read TOTAL BLOCK [BLOCK ...] [--batches=N] [--request-per-block]
 * Build: gcc -O2 -o nixl_probe nixl_probe.c -L<dir> -lnixl_capi -Wl,-rpath,<dir>
 * Prints one line per block size:
 *   nixl_probe write block=4096 total=268435456 batches=5 mean 1.234 GB/s best 1.456 GB/s
 * (with --request-per-block the line starts "nixl_probe write per-block ...") */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_BLOCK_SIZES 64
#define RUN_LIMIT_SECONDS 900

/* The part of NIXL's C API (src/bindings/rust/wrapper.h) this probe calls; NIXL installs the
 * library but not the header. Handles are opaque pointers, statuses ints (0 done, 1 in progress). */
typedef int status_t;
typedef void *handle_t;
enum { SUCCESS = 0, IN_PROGRESS = 1, MEM_DRAM = 0, SYNC_NONE = 0, OP_READ = 0, OP_WRITE = 1 };
/* nixl_capi_agent_config_t: 40 bytes, fields at 0, 1, 4, 8, 12, 16, 24, 32 */
struct agent_config
{
    bool progress_thread;
    bool listen_thread;
    int listen_port;
    int thread_sync;
    unsigned int workers;
    uint64_t progress_delay_us;
    uint64_t listen_delay_us;
    bool telemetry;
};
_Static_assert(sizeof(struct agent_config) == 40, "nixl_capi_agent_config_t is 40 bytes");

status_t nixl_capi_create_configured_agent(const char *name, const struct agent_config *config, handle_t *agent);
status_t nixl_capi_destroy_agent(handle_t agent);
status_t nixl_capi_create_params(handle_t *params);
status_t nixl_capi_params_add(handle_t params, const char *key, const char *value);
status_t nixl_capi_destroy_params(handle_t params);
status_t nixl_capi_create_backend(handle_t agent, const char *plugin, handle_t params, handle_t *backend);
status_t nixl_capi_destroy_backend(handle_t backend);
status_t nixl_capi_create_opt_args(handle_t *args);
status_t nixl_capi_destroy_opt_args(handle_t args);
status_t nixl_capi_opt_args_add_backend(handle_t args, handle_t backend);
status_t nixl_capi_opt_args_set_skip_desc_merge(handle_t args, bool skip);
status_t nixl_capi_create_reg_dlist(int memory, handle_t *list);
status_t nixl_capi_reg_dlist_add_desc(handle_t list, uintptr_t address, size_t length, uint64_t device, const void *metadata, size_t metadata_length);
status_t nixl_capi_destroy_reg_dlist(handle_t list);
status_t nixl_capi_register_mem(handle_t agent, handle_t list, handle_t args);
status_t nixl_capi_deregister_mem(handle_t agent, handle_t list, handle_t args);
status_t nixl_capi_get_local_md(handle_t agent, void **blob, size_t *length);
status_t nixl_capi_load_remote_md(handle_t agent, const void *blob, size_t length, char **name);
status_t nixl_capi_invalidate_remote_md(handle_t agent, const char *name);
status_t nixl_capi_create_xfer_dlist(int memory, handle_t *list);
status_t nixl_capi_xfer_dlist_add_desc(handle_t list, uintptr_t address, size_t length, uint64_t device);
status_t nixl_capi_destroy_xfer_dlist(handle_t list);
status_t nixl_capi_prep_xfer_dlist(handle_t agent, const char *owner, handle_t list, handle_t *prepared, handle_t args);
status_t nixl_capi_release_xfer_dlist_handle(handle_t agent, handle_t prepared);
status_t nixl_capi_make_xfer_req(handle_t agent, int op, handle_t local, const int *local_indices, size_t local_count, handle_t remote,
        const int *remote_indices, size_t remote_count, handle_t *request, handle_t args);
status_t nixl_capi_post_xfer_req(handle_t agent, handle_t request, handle_t args);
status_t nixl_capi_get_xfer_status(handle_t agent, handle_t request);
status_t nixl_capi_release_xfer_req(handle_t agent, handle_t request);
status_t nixl_capi_destroy_xfer_req(handle_t request);

struct agent
{
    char name[64];
    handle_t handle;
    handle_t backend;
    handle_t hint;
    unsigned char *region;
    handle_t registered;
};

static void check(status_t status, const char *what)
{
    if (status != SUCCESS) {
        fprintf(stderr, "nixl_probe: %s returned %d\n", what, (int) status);
        exit(2);
    }
}

static double seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double) now.tv_sec + (double) now.tv_nsec / 1e9;
}

static void open_agent(struct agent *a, const char *role, size_t total)
{
    snprintf(a->name, sizeof(a->name), "nixl-probe-%s-%ld", role, (long) getpid());
    /* as the transport opens its agents: NIXL's progress thread, waking at least every 100 us (0 spins
       a core), no listener, no agent lock */
    struct agent_config config = {
        .progress_thread = true, .listen_thread = false, .listen_port = 0, .thread_sync = SYNC_NONE,
        .workers = 1, .progress_delay_us = 100, .listen_delay_us = 100000, .telemetry = false};
    check(nixl_capi_create_configured_agent(a->name, &config, &a->handle), "nixl_capi_create_configured_agent");
    handle_t params;
    check(nixl_capi_create_params(&params), "nixl_capi_create_params");
    check(nixl_capi_params_add(params, "num_workers", "1"), "nixl_capi_params_add");
    check(nixl_capi_create_backend(a->handle, "UCX", params, &a->backend), "nixl_capi_create_backend (is NIXL_PLUGIN_DIR set?)");
    check(nixl_capi_destroy_params(params), "nixl_capi_destroy_params");
    check(nixl_capi_create_opt_args(&a->hint), "nixl_capi_create_opt_args");
    check(nixl_capi_opt_args_add_backend(a->hint, a->backend), "nixl_capi_opt_args_add_backend");
    if (posix_memalign((void **) &a->region, 4096, total) != 0) {
        fprintf(stderr, "nixl_probe: cannot allocate %zu bytes\n", total);
        exit(2);
    }
    memset(a->region, 0, total);
    check(nixl_capi_create_reg_dlist(MEM_DRAM, &a->registered), "nixl_capi_create_reg_dlist");
    check(nixl_capi_reg_dlist_add_desc(a->registered, (uintptr_t) a->region, total, 0, NULL, 0), "nixl_capi_reg_dlist_add_desc");
    check(nixl_capi_register_mem(a->handle, a->registered, a->hint), "nixl_capi_register_mem");
}

static void close_agent(struct agent *a)
{
    check(nixl_capi_deregister_mem(a->handle, a->registered, a->hint), "nixl_capi_deregister_mem");
    check(nixl_capi_destroy_reg_dlist(a->registered), "nixl_capi_destroy_reg_dlist");
    check(nixl_capi_destroy_opt_args(a->hint), "nixl_capi_destroy_opt_args");
    check(nixl_capi_destroy_backend(a->backend), "nixl_capi_destroy_backend");
    check(nixl_capi_destroy_agent(a->handle), "nixl_capi_destroy_agent");
    free(a->region);
}

static handle_t prepare(struct agent *initiator, const char *owner, unsigned char *region, size_t total, size_t block)
{
    handle_t list;
    check(nixl_capi_create_xfer_dlist(MEM_DRAM, &list), "nixl_capi_create_xfer_dlist");
    for (size_t offset = 0; offset + block <= total; offset += block) {
        check(nixl_capi_xfer_dlist_add_desc(list, (uintptr_t) (region + offset), block, 0), "nixl_capi_xfer_dlist_add_desc");
    }
    handle_t handle;
    check(nixl_capi_prep_xfer_dlist(initiator->handle, owner, list, &handle, initiator->hint), "nixl_capi_prep_xfer_dlist");
    check(nixl_capi_destroy_xfer_dlist(list), "nixl_capi_destroy_xfer_dlist");
    return handle;
}

static handle_t make(struct agent *initiator, int write, handle_t local, handle_t remote, const int *indices, int count, handle_t options)
{
    handle_t request;
    check(nixl_capi_make_xfer_req(initiator->handle, write ? OP_WRITE : OP_READ, local, indices, (size_t) count, remote, indices, (size_t) count,
                  &request, options),
            "nixl_capi_make_xfer_req");
    return request;
}

/* posts a request (NULL options: as it was made) and polls it to completion */
static void complete(struct agent *initiator, handle_t request)
{
    status_t status = nixl_capi_post_xfer_req(initiator->handle, request, NULL);
    while (status == IN_PROGRESS) {
        status = nixl_capi_get_xfer_status(initiator->handle, request);
    }
    check(status, "nixl_capi_post_xfer_req / nixl_capi_get_xfer_status");
}

static void release(struct agent *initiator, handle_t request)
{
    check(nixl_capi_release_xfer_req(initiator->handle, request), "nixl_capi_release_xfer_req");
    check(nixl_capi_destroy_xfer_req(request), "nixl_capi_destroy_xfer_req");
}

static void fill(unsigned char *region, size_t total, size_t block)
{
    for (size_t i = 0; i < total; i++) {
        region[i] = (unsigned char) ((i / block) * 131 + i * 7 + 1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "read") != 0)) {
        fprintf(stderr, "usage: nixl_probe write|read TOTAL BLOCK [BLOCK ...] [--batches=N] [--request-per-block]\n");
        return 2;
    }
    alarm(RUN_LIMIT_SECONDS);
    int write = strcmp(argv[1], "write") == 0;
    size_t total = strtoull(argv[2], NULL, 10);
    size_t blocks[MAX_BLOCK_SIZES];
    int block_count = 0;
    int batches = 5;
    bool per_block = false;
    for (int i = 3; i < argc; i++) {
        if (strncmp(argv[i], "--batches=", 10) == 0) {
            batches = atoi(argv[i] + 10);
        }
        else if (strcmp(argv[i], "--request-per-block") == 0) {
            per_block = true;
        }
        else if (block_count < MAX_BLOCK_SIZES) {
            blocks[block_count++] = strtoull(argv[i], NULL, 10);
        }
    }
    if (total == 0 || batches < 1 || block_count == 0) {
        fprintf(stderr, "nixl_probe: TOTAL, BLOCK and --batches must be positive\n");
        return 2;
    }
    for (int b = 0; b < block_count; b++) {
        if (blocks[b] == 0 || blocks[b] > total || total % blocks[b] != 0 || total / blocks[b] > 0x7fffffff) {
            fprintf(stderr, "nixl_probe: block=%zu must divide total=%zu into at most 2^31-1 blocks\n", blocks[b], total);
            return 2;
        }
    }
    struct agent initiator = {0};
    struct agent target = {0};
    open_agent(&initiator, "initiator", total);
    open_agent(&target, "target", total);
    void *blob;
    size_t blob_len;
    char *loaded;
    check(nixl_capi_get_local_md(target.handle, &blob, &blob_len), "nixl_capi_get_local_md");
    check(nixl_capi_load_remote_md(initiator.handle, blob, blob_len, &loaded), "nixl_capi_load_remote_md");
    free(loaded);
    free(blob);
    /* a write moves the initiator's region into the target's, a read the target's into the initiator's */
    unsigned char *source = write ? initiator.region : target.region;
    unsigned char *destination = write ? target.region : initiator.region;
    for (int b = 0; b < block_count; b++) {
        size_t block = blocks[b];
        int count = (int) (total / block);
        fill(source, total, block);
        memset(destination, 0, total);
        handle_t local = prepare(&initiator, "", initiator.region, total, block);
        handle_t remote = prepare(&initiator, target.name, target.region, total, block);
        int *indices = malloc((size_t) count * sizeof(int));
        for (int i = 0; i < count; i++) {
            indices[i] = i;
        }
        handle_t options;
        handle_t whole = NULL;
        check(nixl_capi_create_opt_args(&options), "nixl_capi_create_opt_args");
        check(nixl_capi_opt_args_add_backend(options, initiator.backend), "nixl_capi_opt_args_add_backend");
        check(nixl_capi_opt_args_set_skip_desc_merge(options, true), "nixl_capi_opt_args_set_skip_desc_merge");
        double best = 0;
        double sum = 0;
        for (int pass = 0; pass <= batches; pass++) {
            double started = seconds();
            if (per_block) {
                for (int i = 0; i < count; i++) {
                    handle_t request = make(&initiator, write, local, remote, indices + i, 1, options);
                    complete(&initiator, request);
                    release(&initiator, request);
                }
            }
            else {
                if (pass == 0) {
                    whole = make(&initiator, write, local, remote, indices, count, options);
                }
                /* a finished request is posted again as it was made */
                complete(&initiator, whole);
            }
            double rate = (double) total / (seconds() - started) / 1e9;
            if (pass > 0) {
                sum += rate;
                best = rate > best ? rate : best;
            }
        }
        if (memcmp(source, destination, total) != 0) {
            fprintf(stderr, "nixl_probe: block=%zu: the destination differs from the source after the passes\n", block);
            return 1;
        }
        if (!per_block) {
            release(&initiator, whole);
        }
        check(nixl_capi_destroy_opt_args(options), "nixl_capi_destroy_opt_args");
        check(nixl_capi_release_xfer_dlist_handle(initiator.handle, local), "nixl_capi_release_xfer_dlist_handle");
        check(nixl_capi_release_xfer_dlist_handle(initiator.handle, remote), "nixl_capi_release_xfer_dlist_handle");
        free(indices);
        printf("nixl_probe %s%s block=%zu total=%zu batches=%d mean %.3f GB/s best %.3f GB/s\n", argv[1], per_block ? " per-block" : "", block, total,
                batches, sum / batches, best);
        fflush(stdout);
    }
    check(nixl_capi_invalidate_remote_md(initiator.handle, target.name), "nixl_capi_invalidate_remote_md");
    close_agent(&target);
    close_agent(&initiator);
    return 0;
}
