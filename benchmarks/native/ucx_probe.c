/* UCX one-sided bandwidth between two processes, written against the UCP C API alone: the baseline
 * `kvbridge bench` puts next to the ucx transport.
 *
 * The process forks; the parent initiates, the child is the target. Each creates its own UCP
 * context, worker and endpoint to the other (worker addresses, region base addresses and packed
 * remote keys travel over a socketpair) and registers one region of TOTAL bytes. Per block size,
 * a batch issues one ucp_put_nbx (or ucp_get_nbx) per block, walking the whole region, then one
 * ucp_ep_flush_nbx; GB/s = TOTAL / (first issue to flush complete). One untimed batch comes first,
 * then BATCHES timed ones; the mean and the best are printed. The destination is zeroed before each
 * block size and compared with the source's pattern after it, so lost bytes fail the run.
 * The target only drives its worker (needed for transports that emulate RMA) and answers the
 * initiator's commands between batches. UCX settings come from the environment (UCX_TLS, ...).
 *
 * Usage: ucx_probe put|get TOTAL BLOCK [BLOCK ...] [--memory=own|ucx] [--batches=N]
 *   own: the region is mmap'ed by the probe and registered (ucp_mem_map of an address);
 *   ucx: UCX allocates it (UCP_MEM_MAP_ALLOCATE), which lets shared-memory transports map it.
 * Build: gcc -O2 -o ucx_probe ucx_probe.c -lucp -lucs
 * Prints one line per block size:
 *   ucx_probe put block=4096 total=268435456 memory=own batches=5 mean 1.234 GB/s best 1.456 GB/s */
#define _GNU_SOURCE
#include <ucp/api/ucp.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_BLOCK_SIZES 64
#define RUN_LIMIT_SECONDS 900

/* commands the initiator sends the target between batches; the target echoes each when done */
#define COMMAND_ZERO 'z'   /* zero the region */
#define COMMAND_CHECK 'c'  /* compare the region with the pattern; answered with 'y' or 'n' */
#define COMMAND_FILL 'f'   /* write the pattern into the region */
#define COMMAND_QUIT 'q'

static int channel = -1;
static const char *role = "initiator";

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "ucx_probe (%s): %s: %s\n", role, what, why);
    exit(2);
}

static void check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        fail(what, ucs_status_string(status));
    }
}

static double seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

static void send_all(const void *data, size_t length)
{
    const char *next = data;
    while (length > 0) {
        ssize_t sent = write(channel, next, length);
        if (sent < 0 && errno == EINTR) {
            continue;
        }
        if (sent <= 0) {
            fail("writing to the peer", strerror(errno));
        }
        next += sent;
        length -= (size_t) sent;
    }
}

static void receive_all(void *data, size_t length)
{
    char *next = data;
    while (length > 0) {
        ssize_t got = read(channel, next, length);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            fail("reading from the peer", got == 0 ? "the peer closed the channel" : strerror(errno));
        }
        next += got;
        length -= (size_t) got;
    }
}

/* a length-prefixed message, for worker addresses and remote keys */
static void send_message(const void *data, uint64_t length)
{
    send_all(&length, sizeof length);
    send_all(data, length);
}

static void *receive_message(uint64_t *length)
{
    receive_all(length, sizeof *length);
    if (*length == 0 || *length > (1u << 20)) {
        fail("reading from the peer", "message length out of range");
    }
    void *data = malloc(*length);
    if (data == NULL) {
        fail("reading from the peer", "out of memory");
    }
    receive_all(data, *length);
    return data;
}

/* completes a request returned by an _nbx call by driving the worker; NULL means it completed at once */
static ucs_status_t complete(ucp_worker_h worker, ucs_status_ptr_t request)
{
    if (request == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(request);
    return status;
}

/* every 8-byte word differs from its neighbours, so a block written to the wrong offset shows */
static uint64_t pattern(size_t word)
{
    return word * 0x9E3779B97F4A7C15ull + 1;
}

static void fill(uint64_t *region, size_t total)
{
    for (size_t word = 0; word < total / sizeof(uint64_t); word++) {
        region[word] = pattern(word);
    }
}

static int matches(const uint64_t *region, size_t total)
{
    for (size_t word = 0; word < total / sizeof(uint64_t); word++) {
        if (region[word] != pattern(word)) {
            return 0;
        }
    }
    return 1;
}

/* the target's side: drive the worker, answer commands until told to quit */
static void serve(ucp_worker_h worker, uint64_t *region, size_t total)
{
    struct pollfd readable = {.fd = channel, .events = POLLIN};
    for (;;) {
        /* a poll(2) per progress call would cost more than most progress calls; look every 256 */
        for (int spin = 0; spin < 256; spin++) {
            ucp_worker_progress(worker);
        }
        if (poll(&readable, 1, 0) <= 0) {
            continue;
        }
        char command;
        receive_all(&command, 1);
        char answer = command;
        switch (command) {
        case COMMAND_ZERO:
            memset(region, 0, total);
            break;
        case COMMAND_FILL:
            fill(region, total);
            break;
        case COMMAND_CHECK:
            answer = matches(region, total) ? 'y' : 'n';
            break;
        case COMMAND_QUIT:
            send_all(&answer, 1);
            return;
        default:
            fail("reading a command", "unknown command");
        }
        send_all(&answer, 1);
    }
}

static char ask(char command)
{
    char answer;
    send_all(&command, 1);
    receive_all(&answer, 1);
    return answer;
}

static double batch(ucp_worker_h worker, ucp_ep_h endpoint, ucp_mem_h memory, ucp_rkey_h remote_key, char *local,
                    uint64_t remote, size_t total, size_t block, int is_get)
{
    /* the local region's registration, so UCX need not look it up per operation */
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH, .memh = memory};
    size_t operations = total / block;
    double start = seconds();
    for (size_t operation = 0; operation < operations; operation++) {
        size_t offset = operation * block;
        ucs_status_ptr_t request = is_get
                ? ucp_get_nbx(endpoint, local + offset, block, remote + offset, remote_key, &param)
                : ucp_put_nbx(endpoint, local + offset, block, remote + offset, remote_key, &param);
        if (UCS_PTR_IS_ERR(request)) {
            fail(is_get ? "ucp_get_nbx" : "ucp_put_nbx", ucs_status_string(UCS_PTR_STATUS(request)));
        }
        if (request != NULL) {
            /* completion is observed through the flush below */
            ucp_request_free(request);
        }
        if ((operation & 63) == 63) {
            ucp_worker_progress(worker);
        }
    }
    ucp_request_param_t flush_param = {.op_attr_mask = 0};
    check(complete(worker, ucp_ep_flush_nbx(endpoint, &flush_param)), "ucp_ep_flush_nbx");
    return total / (seconds() - start) / 1e9;
}

static size_t parse_size(const char *text, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || value == 0 || text[0] == '-') {
        fprintf(stderr, "ucx_probe: %s=%s must be a positive number of bytes\n", what, text);
        exit(1);
    }
    return (size_t) value;
}

static void usage(void)
{
    fprintf(stderr, "usage: ucx_probe put|get TOTAL BLOCK [BLOCK ...] [--memory=own|ucx] [--batches=N]\n");
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "put") != 0 && strcmp(argv[1], "get") != 0)) {
        usage();
    }
    int is_get = strcmp(argv[1], "get") == 0;
    size_t total = parse_size(argv[2], "TOTAL");
    size_t blocks[MAX_BLOCK_SIZES];
    int block_count = 0;
    int ucx_allocates = 0;
    int batches = 5;
    for (int arg = 3; arg < argc; arg++) {
        if (strcmp(argv[arg], "--memory=own") == 0 || strcmp(argv[arg], "--memory=ucx") == 0) {
            ucx_allocates = strcmp(argv[arg], "--memory=ucx") == 0;
        } else if (strncmp(argv[arg], "--batches=", 10) == 0) {
            batches = atoi(argv[arg] + 10);
            if (batches < 1 || batches > 1000) {
                fprintf(stderr, "ucx_probe: %s must be between 1 and 1000\n", argv[arg]);
                return 1;
            }
        } else if (argv[arg][0] == '-') {
            usage();
        } else {
            if (block_count == MAX_BLOCK_SIZES) {
                fprintf(stderr, "ucx_probe: at most %d block sizes\n", MAX_BLOCK_SIZES);
                return 1;
            }
            size_t block = parse_size(argv[arg], "BLOCK");
            if (total % block != 0) {
                fprintf(stderr, "ucx_probe: BLOCK=%zu must divide TOTAL=%zu\n", block, total);
                return 1;
            }
            blocks[block_count++] = block;
        }
    }
    if (block_count == 0 || total % sizeof(uint64_t) != 0) {
        fprintf(stderr, "ucx_probe: give at least one BLOCK, and a TOTAL that is a multiple of 8\n");
        return 1;
    }

    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) {
        fail("socketpair", strerror(errno));
    }
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        fail("fork", strerror(errno));
    }
    int initiator = child != 0;
    if (!initiator) {
        role = "target";
        /* a target whose initiator was killed must not linger */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    }
    channel = initiator ? ends[0] : ends[1];
    close(initiator ? ends[1] : ends[0]);
    alarm(RUN_LIMIT_SECONDS);

    ucp_config_t *config;
    check(ucp_config_read(NULL, NULL, &config), "ucp_config_read");
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_RMA};
    ucp_context_h context;
    check(ucp_init(&params, config, &context), "ucp_init");
    ucp_config_release(config);

    ucp_worker_params_t worker_params = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_worker_h worker;
    check(ucp_worker_create(context, &worker_params, &worker), "ucp_worker_create");

    ucp_address_t *address;
    size_t address_length;
    check(ucp_worker_get_address(worker, &address, &address_length), "ucp_worker_get_address");
    send_message(address, address_length);
    ucp_worker_release_address(worker, address);
    uint64_t peer_address_length;
    void *peer_address = receive_message(&peer_address_length);
    ucp_ep_params_t endpoint_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = peer_address};
    ucp_ep_h endpoint;
    check(ucp_ep_create(worker, &endpoint_params, &endpoint), "ucp_ep_create");
    free(peer_address);

    ucp_mem_map_params_t map_params;
    memset(&map_params, 0, sizeof map_params);
    map_params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    map_params.length = total;
    void *own = NULL;
    if (ucx_allocates) {
        map_params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        map_params.flags = UCP_MEM_MAP_ALLOCATE;
        map_params.address = NULL;
    } else {
        own = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (own == MAP_FAILED) {
            fail("mmap", strerror(errno));
        }
        map_params.address = own;
    }
    ucp_mem_h memory;
    check(ucp_mem_map(context, &map_params, &memory), "ucp_mem_map");
    ucp_mem_attr_t attributes = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    check(ucp_mem_query(memory, &attributes), "ucp_mem_query");
    char *region = attributes.address;
    memset(region, 0, total);

    void *packed_key;
    size_t packed_key_length;
    check(ucp_rkey_pack(context, memory, &packed_key, &packed_key_length), "ucp_rkey_pack");
    uint64_t base = (uint64_t) (uintptr_t) region;
    send_all(&base, sizeof base);
    send_message(packed_key, packed_key_length);
    ucp_rkey_buffer_release(packed_key);
    uint64_t remote_base;
    receive_all(&remote_base, sizeof remote_base);
    uint64_t peer_key_length;
    void *peer_key = receive_message(&peer_key_length);
    ucp_rkey_h remote_key;
    check(ucp_ep_rkey_unpack(endpoint, peer_key, &remote_key), "ucp_ep_rkey_unpack");
    free(peer_key);

    if (!initiator) {
        serve(worker, (uint64_t *) region, total);
    } else {
        if (is_get) {
            ask(COMMAND_FILL);
        } else {
            fill((uint64_t *) region, total);
        }
        for (int size = 0; size < block_count; size++) {
            if (is_get) {
                memset(region, 0, total);
            } else {
                ask(COMMAND_ZERO);
            }
            double sum = 0;
            double best = 0;
            for (int round = 0; round <= batches; round++) {
                double rate = batch(worker, endpoint, memory, remote_key, region, remote_base, total, blocks[size], is_get);
                if (round > 0) {
                    sum += rate;
                    best = rate > best ? rate : best;
                }
            }
            int intact = is_get ? matches((uint64_t *) region, total) : ask(COMMAND_CHECK) == 'y';
            if (!intact) {
                fprintf(stderr, "ucx_probe: block=%zu: the destination differs from the source after the flush completed\n", blocks[size]);
                ask(COMMAND_QUIT);
                return 3;
            }
            printf("ucx_probe %s block=%zu total=%zu memory=%s batches=%d mean %.3f GB/s best %.3f GB/s\n", argv[1], blocks[size], total,
                   ucx_allocates ? "ucx" : "own", batches, sum / batches, best);
            fflush(stdout);
        }
        ask(COMMAND_QUIT);
    }

    ucp_rkey_destroy(remote_key);
    ucp_request_param_t close_params = {.op_attr_mask = 0};
    /* flush-mode close; nothing is in flight any more, but over tcp the side that closes second may
     * find the connection already closed or reset by the first, which is no failure after the last check */
    ucs_status_t closed = complete(worker, ucp_ep_close_nbx(endpoint, &close_params));
    if (closed != UCS_ERR_CONNECTION_RESET && closed != UCS_ERR_NOT_CONNECTED) {
        check(closed, "ucp_ep_close_nbx");
    }
    check(ucp_mem_unmap(context, memory), "ucp_mem_unmap");
    if (own != NULL) {
        munmap(own, total);
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    if (initiator) {
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "ucx_probe: the target process did not end cleanly\n");
            return 2;
        }
    }
    return 0;
}
