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
 * --window=W --batch=B shape a pass as the transport's transfers: B blocks, then a flush of their
 * own, with at most W such flushes in flight; GB/s is then TOTAL / (first issue to last flush).
 *
 * Two hosts (`kvbridge bench --role target|initiator`): `--serve=HOST:PORT TOTAL` is the target; it
 * listens there (port 0: the kernel picks; the line `ucx_probe listening port=N` says which),
 * accepts one connection and serves it. `--connect=HOST:PORT put|get|both TOTAL BLOCK...` is the
 * initiator. The connection carries what the socketpair carries in one process, after a header
 * (a magic word and the total, which the target checks against its own TOTAL); every number on it
 * is big-endian. Accepting, connecting and every read and write have a deadline of
 * SOCKET_TIMEOUT_SECONDS, each wait for UCX or for the next command one of
 * PROGRESS_TIMEOUT_SECONDS, and the whole run an alarm.
 *
 * Usage: ucx_probe put|get|both TOTAL BLOCK [BLOCK ...] [--memory=own|ucx] [--batches=N] [--window=W --batch=B]
 *        ucx_probe --serve=HOST:PORT TOTAL [--memory=own|ucx]
 *        ucx_probe --connect=HOST:PORT put|get|both TOTAL BLOCK [BLOCK ...] [--memory=own|ucx] [--batches=N] [--window=W --batch=B]
 *   own: the region is mmap'ed by the probe and registered (ucp_mem_map of an address);
 *   ucx: UCX allocates it (UCP_MEM_MAP_ALLOCATE), which lets shared-memory transports map it.
 *   both: every block size put, then every block size get.
 * Build: gcc -O2 -o ucx_probe ucx_probe.c -lucp -lucs
 * Prints one line per operation and block size (window and batch only when given):
 *   ucx_probe put block=4096 total=268435456 memory=own batches=5 mean 1.234 GB/s best 1.456 GB/s
 *   ucx_probe get block=4096 total=268435456 memory=ucx batches=5 window=8 batch=1 mean 1.234 GB/s best 1.456 GB/s */
#define _GNU_SOURCE
#include <ucp/api/ucp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_BLOCK_SIZES 64
#define MAX_WINDOW 4096
#define RUN_LIMIT_SECONDS 900
#define SOCKET_TIMEOUT_SECONDS 60
#define SOCKET_TIMEOUT_TEXT "60"
/* a wait for UCX or for the next command: one pass of the slowest block size, on a loaded host, must fit */
#define PROGRESS_TIMEOUT_SECONDS 300
#define PROGRESS_TIMEOUT_TEXT "300"
#define MAGIC "kvbprob1"

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

static const char *socket_error(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK ? "timed out after " SOCKET_TIMEOUT_TEXT " s" : strerror(errno);
}

static void send_all(const void *data, size_t length)
{
    const char *next = data;
    while (length > 0) {
        ssize_t sent = send(channel, next, length, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) {
            continue;
        }
        if (sent <= 0) {
            fail("writing to the peer", socket_error());
        }
        next += sent;
        length -= (size_t) sent;
    }
}

static void receive_all(void *data, size_t length)
{
    char *next = data;
    while (length > 0) {
        ssize_t got = recv(channel, next, length, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            fail("reading from the peer", got == 0 ? "the peer closed the channel" : socket_error());
        }
        next += got;
        length -= (size_t) got;
    }
}

/* numbers cross the channel big-endian, so that two hosts need not agree on byte order */
static void send_number(uint64_t value)
{
    unsigned char bytes[8];
    for (int i = 7; i >= 0; i--) {
        bytes[i] = (unsigned char) value;
        value >>= 8;
    }
    send_all(bytes, sizeof bytes);
}

static uint64_t receive_number(void)
{
    unsigned char bytes[8];
    receive_all(bytes, sizeof bytes);
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) {
        value = value << 8 | bytes[i];
    }
    return value;
}

/* a length-prefixed message, for worker addresses and remote keys */
static void send_message(const void *data, uint64_t length)
{
    send_number(length);
    send_all(data, length);
}

static void *receive_message(uint64_t *length)
{
    *length = receive_number();
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
static ucs_status_t complete(ucp_worker_h worker, ucs_status_ptr_t request, const char *what)
{
    if (request == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return UCS_PTR_STATUS(request);
    }
    ucs_status_t status;
    double deadline = seconds() + PROGRESS_TIMEOUT_SECONDS;
    unsigned spins = 0;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
        if ((++spins & 1023) == 0 && seconds() > deadline) {
            fail(what, "not complete after " PROGRESS_TIMEOUT_TEXT " s (is the peer alive and reachable over UCX_TLS?)");
        }
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
    /* an initiator that stops sending commands must not hold the target */
    double deadline = seconds() + PROGRESS_TIMEOUT_SECONDS;
    for (;;) {
        /* a poll(2) per progress call would cost more than most progress calls; look every 256 */
        for (int spin = 0; spin < 256; spin++) {
            ucp_worker_progress(worker);
        }
        if (poll(&readable, 1, 0) <= 0) {
            if (seconds() > deadline) {
                fail("waiting for a command", "none within " PROGRESS_TIMEOUT_TEXT " s");
            }
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
        deadline = seconds() + PROGRESS_TIMEOUT_SECONDS;
    }
}

static char ask(char command)
{
    char answer;
    send_all(&command, 1);
    receive_all(&answer, 1);
    return answer;
}

/* how a pass is cut: window 0 is one flush after every block; else transfers of batch blocks, each flushed, at most window in flight */
struct shape
{
    int window;
    int batch;
};

static void issue(ucp_worker_h worker, ucp_ep_h endpoint, const ucp_request_param_t *param, ucp_rkey_h remote_key, char *local, uint64_t remote,
                  size_t offset, size_t block, int is_get, size_t operation)
{
    ucs_status_ptr_t request = is_get
            ? ucp_get_nbx(endpoint, local + offset, block, remote + offset, remote_key, param)
            : ucp_put_nbx(endpoint, local + offset, block, remote + offset, remote_key, param);
    if (UCS_PTR_IS_ERR(request)) {
        fail(is_get ? "ucp_get_nbx" : "ucp_put_nbx", ucs_status_string(UCS_PTR_STATUS(request)));
    }
    if (request != NULL) {
        /* completion is observed through the flush that follows */
        ucp_request_free(request);
    }
    if ((operation & 63) == 63) {
        ucp_worker_progress(worker);
    }
}

static double batch(ucp_worker_h worker, ucp_ep_h endpoint, ucp_mem_h memory, ucp_rkey_h remote_key, char *local,
                    uint64_t remote, size_t total, size_t block, int is_get, struct shape shape)
{
    /* the local region's registration, so UCX need not look it up per operation */
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH, .memh = memory};
    ucp_request_param_t flush_param = {.op_attr_mask = 0};
    size_t operations = total / block;
    double start = seconds();
    if (shape.window == 0) {
        for (size_t operation = 0; operation < operations; operation++) {
            issue(worker, endpoint, &param, remote_key, local, remote, operation * block, block, is_get, operation);
        }
        check(complete(worker, ucp_ep_flush_nbx(endpoint, &flush_param), "ucp_ep_flush_nbx"), "ucp_ep_flush_nbx");
        return total / (seconds() - start) / 1e9;
    }
    /* a ring of the flushes in flight, oldest first: a flush completes after everything issued before it */
    ucs_status_ptr_t flushes[MAX_WINDOW];
    int oldest = 0;
    int in_flight = 0;
    for (size_t operation = 0; operation < operations;) {
        if (in_flight == shape.window) {
            check(complete(worker, flushes[oldest], "ucp_ep_flush_nbx"), "ucp_ep_flush_nbx");
            oldest = (oldest + 1) % shape.window;
            in_flight--;
        }
        for (int block_of_transfer = 0; block_of_transfer < shape.batch; block_of_transfer++, operation++) {
            issue(worker, endpoint, &param, remote_key, local, remote, operation * block, block, is_get, operation);
        }
        ucs_status_ptr_t flush = ucp_ep_flush_nbx(endpoint, &flush_param);
        if (UCS_PTR_IS_ERR(flush)) {
            fail("ucp_ep_flush_nbx", ucs_status_string(UCS_PTR_STATUS(flush)));
        }
        flushes[(oldest + in_flight) % shape.window] = flush;
        in_flight++;
    }
    for (; in_flight > 0; in_flight--, oldest = (oldest + 1) % shape.window) {
        check(complete(worker, flushes[oldest], "ucp_ep_flush_nbx"), "ucp_ep_flush_nbx");
    }
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

static int parse_count(const char *arg, const char *value, int max)
{
    char *end;
    long number = strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || number < 1 || number > max) {
        fprintf(stderr, "ucx_probe: %s must be a number from 1 to %d\n", arg, max);
        exit(1);
    }
    return (int) number;
}

static void usage(void)
{
    fprintf(stderr, "usage: ucx_probe put|get|both TOTAL BLOCK [BLOCK ...] [--memory=own|ucx] [--batches=N] [--window=W --batch=B]\n"
            "       ucx_probe --serve=HOST:PORT TOTAL [--memory=own|ucx]\n"
            "       ucx_probe --connect=HOST:PORT put|get|both TOTAL BLOCK [BLOCK ...] [--memory=own|ucx] [--batches=N] [--window=W --batch=B]\n");
    exit(1);
}

static int resolve(const char *spec, struct sockaddr_storage *address, socklen_t *length)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (colon == NULL || colon == spec || (size_t) (colon - spec) >= sizeof host || colon[1] == '\0') {
        return -1;
    }
    memcpy(host, spec, (size_t) (colon - spec));
    host[colon - spec] = '\0';
    char *bare = host;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        host[strlen(host) - 1] = '\0';
        bare = host + 1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *found;
    if (getaddrinfo(bare, colon + 1, &hints, &found) != 0) {
        return -1;
    }
    memcpy(address, found->ai_addr, found->ai_addrlen);
    *length = found->ai_addrlen;
    freeaddrinfo(found);
    return 0;
}

/* resolves an option's HOST:PORT, or ends the run naming the option (usage error) */
static void resolve_option(const char *option, const char *spec, struct sockaddr_storage *address, socklen_t *length)
{
    if (resolve(spec, address, length) != 0) {
        fprintf(stderr, "ucx_probe: %s=%s is not HOST:PORT of a resolvable host\n", option, spec);
        exit(1);
    }
}

static void deadlines(int socket, int tcp)
{
    struct timeval timeout = {.tv_sec = SOCKET_TIMEOUT_SECONDS};
    int on = 1;
    if (setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0
            || setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0
            || (tcp && setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0)) {
        fail("setsockopt", strerror(errno));
    }
}

/* the target's end between two hosts: listen, accept one initiator within the deadline, check its header */
static void accept_initiator(const char *spec, size_t total)
{
    struct sockaddr_storage address;
    socklen_t length;
    resolve_option("--serve", spec, &address, &length);
    int listener = socket(address.ss_family, SOCK_STREAM, 0);
    int on = 1;
    if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0
            || bind(listener, (struct sockaddr *) &address, length) != 0 || listen(listener, 1) != 0
            || getsockname(listener, (struct sockaddr *) &address, &length) != 0) {
        fail("listen", strerror(errno));
    }
    int port = address.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *) &address)->sin6_port) : ntohs(((struct sockaddr_in *) &address)->sin_port);
    printf("ucx_probe listening port=%d\n", port);
    fflush(stdout);
    struct pollfd waiting = {.fd = listener, .events = POLLIN};
    int ready = poll(&waiting, 1, SOCKET_TIMEOUT_SECONDS * 1000);
    if (ready <= 0) {
        fail("accept", ready == 0 ? "no initiator connected within " SOCKET_TIMEOUT_TEXT " s" : strerror(errno));
    }
    channel = accept(listener, NULL, NULL);
    if (channel < 0) {
        fail("accept", strerror(errno));
    }
    close(listener);
    deadlines(channel, 1);
    char magic[8];
    receive_all(magic, sizeof magic);
    if (memcmp(magic, MAGIC, sizeof magic) != 0) {
        fail("reading the header", "the connecting side is no ucx_probe --connect of this version");
    }
    uint64_t asked = receive_number();
    send_number(total);
    if (asked != total) {
        fprintf(stderr, "ucx_probe (target): the initiator asks for total=%llu but this target holds %zu\n", (unsigned long long) asked, total);
        exit(2);
    }
}

/* the initiator's end between two hosts: connect within the deadline, send the header, check the target's total */
static void connect_target(const char *spec, size_t total)
{
    struct sockaddr_storage address;
    socklen_t length;
    resolve_option("--connect", spec, &address, &length);
    int connection = socket(address.ss_family, SOCK_STREAM, 0);
    if (connection < 0) {
        fail("socket", strerror(errno));
    }
    /* on Linux SO_SNDTIMEO bounds connect(2) too */
    deadlines(connection, 1);
    if (connect(connection, (struct sockaddr *) &address, length) != 0) {
        char why[300];
        snprintf(why, sizeof why, "%s: %s", spec, errno == EINPROGRESS || errno == EAGAIN ? "timed out after " SOCKET_TIMEOUT_TEXT " s" : strerror(errno));
        fail("connect", why);
    }
    channel = connection;
    send_all(MAGIC, 8);
    send_number(total);
    uint64_t held = receive_number();
    if (held != total) {
        fprintf(stderr, "ucx_probe (initiator): the target at %s holds total=%llu but this side asked for %zu\n", spec, (unsigned long long) held, total);
        exit(2);
    }
}

/* measures one operation at every block size; returns 0, or 3 when bytes were lost */
static int measure(ucp_worker_h worker, ucp_ep_h endpoint, ucp_mem_h memory, ucp_rkey_h remote_key, char *region, uint64_t remote_base,
                   size_t total, const size_t *blocks, int block_count, int is_get, int batches, struct shape shape, const char *memory_name)
{
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
            double rate = batch(worker, endpoint, memory, remote_key, region, remote_base, total, blocks[size], is_get, shape);
            if (round > 0) {
                sum += rate;
                best = rate > best ? rate : best;
            }
        }
        int intact = is_get ? matches((uint64_t *) region, total) : ask(COMMAND_CHECK) == 'y';
        if (!intact) {
            fprintf(stderr, "ucx_probe: %s block=%zu: the destination differs from the source after the flush completed\n", is_get ? "get" : "put",
                    blocks[size]);
            return 3;
        }
        char shaped[64] = "";
        if (shape.window > 0) {
            snprintf(shaped, sizeof shaped, " window=%d batch=%d", shape.window, shape.batch);
        }
        printf("ucx_probe %s block=%zu total=%zu memory=%s batches=%d%s mean %.3f GB/s best %.3f GB/s\n", is_get ? "get" : "put", blocks[size], total,
               memory_name, batches, shaped, sum / batches, best);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *serve_at = NULL;
    const char *connect_to = NULL;
    const char *operation = NULL;
    size_t total = 0;
    size_t blocks[MAX_BLOCK_SIZES];
    int block_count = 0;
    int ucx_allocates = 0;
    int batches = 5;
    struct shape shape = {.window = 0, .batch = 1};
    int batch_given = 0;
    for (int arg = 1; arg < argc; arg++) {
        if (strncmp(argv[arg], "--serve=", 8) == 0) {
            serve_at = argv[arg] + 8;
        } else if (strncmp(argv[arg], "--connect=", 10) == 0) {
            connect_to = argv[arg] + 10;
        } else if (strcmp(argv[arg], "--memory=own") == 0 || strcmp(argv[arg], "--memory=ucx") == 0) {
            ucx_allocates = strcmp(argv[arg], "--memory=ucx") == 0;
        } else if (strncmp(argv[arg], "--batches=", 10) == 0) {
            batches = parse_count(argv[arg], argv[arg] + 10, 1000);
        } else if (strncmp(argv[arg], "--window=", 9) == 0) {
            shape.window = parse_count(argv[arg], argv[arg] + 9, MAX_WINDOW);
        } else if (strncmp(argv[arg], "--batch=", 8) == 0) {
            shape.batch = parse_count(argv[arg], argv[arg] + 8, 1 << 16);
            batch_given = 1;
        } else if (argv[arg][0] == '-') {
            usage();
        } else if (operation == NULL && serve_at == NULL) {
            operation = argv[arg];
            if (strcmp(operation, "put") != 0 && strcmp(operation, "get") != 0 && strcmp(operation, "both") != 0) {
                usage();
            }
        } else if (total == 0) {
            total = parse_size(argv[arg], "TOTAL");
        } else {
            if (block_count == MAX_BLOCK_SIZES) {
                fprintf(stderr, "ucx_probe: at most %d block sizes\n", MAX_BLOCK_SIZES);
                return 1;
            }
            blocks[block_count++] = parse_size(argv[arg], "BLOCK");
        }
    }
    if ((serve_at != NULL && (connect_to != NULL || operation != NULL || block_count > 0 || shape.window > 0 || batch_given))
            || (serve_at == NULL && (operation == NULL || block_count == 0)) || total == 0) {
        usage();
    }
    if (batch_given && shape.window == 0) {
        fprintf(stderr, "ucx_probe: --batch=%d shapes transfers only with --window=W\n", shape.batch);
        return 1;
    }
    if (total % sizeof(uint64_t) != 0) {
        fprintf(stderr, "ucx_probe: TOTAL=%zu must be a multiple of 8\n", total);
        return 1;
    }
    for (int size = 0; size < block_count; size++) {
        if (total % blocks[size] != 0 || (total / blocks[size]) % (size_t) shape.batch != 0) {
            fprintf(stderr, "ucx_probe: BLOCK=%zu times --batch=%d must divide TOTAL=%zu\n", blocks[size], shape.batch, total);
            return 1;
        }
    }

    int two_hosts = serve_at != NULL || connect_to != NULL;
    int initiator = serve_at == NULL;
    pid_t child = 0;
    alarm(RUN_LIMIT_SECONDS);
    if (two_hosts) {
        role = initiator ? "initiator" : "target";
        if (initiator) {
            connect_target(connect_to, total);
        } else {
            accept_initiator(serve_at, total);
        }
    } else {
        int ends[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) {
            fail("socketpair", strerror(errno));
        }
        fflush(stdout);
        child = fork();
        if (child < 0) {
            fail("fork", strerror(errno));
        }
        initiator = child != 0;
        if (!initiator) {
            role = "target";
            /* a target whose initiator was killed must not linger */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
        }
        channel = initiator ? ends[0] : ends[1];
        close(initiator ? ends[1] : ends[0]);
        deadlines(channel, 0);
    }

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
    send_number((uint64_t) (uintptr_t) region);
    send_message(packed_key, packed_key_length);
    ucp_rkey_buffer_release(packed_key);
    uint64_t remote_base = receive_number();
    uint64_t peer_key_length;
    void *peer_key = receive_message(&peer_key_length);
    ucp_rkey_h remote_key;
    check(ucp_ep_rkey_unpack(endpoint, peer_key, &remote_key), "ucp_ep_rkey_unpack");
    free(peer_key);

    if (!initiator) {
        serve(worker, (uint64_t *) region, total);
    } else {
        const char *memory_name = ucx_allocates ? "ucx" : "own";
        int lost = 0;
        if (strcmp(operation, "get") != 0) {
            lost = measure(worker, endpoint, memory, remote_key, region, remote_base, total, blocks, block_count, 0, batches, shape, memory_name);
        }
        if (lost == 0 && strcmp(operation, "put") != 0) {
            lost = measure(worker, endpoint, memory, remote_key, region, remote_base, total, blocks, block_count, 1, batches, shape, memory_name);
        }
        ask(COMMAND_QUIT);
        if (lost != 0) {
            return lost;
        }
    }

    ucp_rkey_destroy(remote_key);
    ucp_request_param_t close_params = {.op_attr_mask = 0};
    /* flush-mode close; nothing is in flight any more, but over tcp the side that closes second may
     * find the connection already closed or reset by the first, which is no failure after the last check */
    ucs_status_t closed = complete(worker, ucp_ep_close_nbx(endpoint, &close_params), "ucp_ep_close_nbx");
    if (closed != UCS_ERR_CONNECTION_RESET && closed != UCS_ERR_NOT_CONNECTED) {
        check(closed, "ucp_ep_close_nbx");
    }
    check(ucp_mem_unmap(context, memory), "ucp_mem_unmap");
    if (own != NULL) {
        munmap(own, total);
    }
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    if (initiator && !two_hosts) {
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "ucx_probe: the target process did not end cleanly\n");
            return 2;
        }
    }
    return 0;
}
