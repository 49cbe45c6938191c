/* One plain TCP stream on loopback: the baseline `kvbridge bench` puts next to the ucx transport
 * when UCX runs over TCP, so that its ratio says how much of the wire it uses.
 *
 * The process opens a listening socket on 127.0.0.1 (a port the kernel picks) and forks; the
 * child receives, the parent sends, over one connection. Socket buffers keep the kernel's
 * defaults (and autotuning): SO_SNDBUF and SO_RCVBUF are printed, never set. TCP_NODELAY is set
 * on both ends, as UCX's tcp transport does (UCX_TCP_NODELAY=y). Per block size, a pass sends
 * TOTAL bytes as one send() loop per block, and the receiver reads them into a buffer of TOTAL
 * bytes, never reading across a block boundary, as a receiver placing blocks would; GB/s =
 * TOTAL / (first byte sent to the receiver's one-byte acknowledgement read). Before each pass the
 * receiver says it is ready, so that neither side's preparation is timed. One untimed pass comes
 * first, then PASSES timed ones; the mean and the best are printed. The last pass of each block
 * size carries a pattern of its own, which the receiver checks, so lost or misplaced bytes fail
 * the run. Every socket read and write has a timeout, and the whole run an alarm.
 *
 * Two hosts (`kvbridge bench --role target|initiator`): `--serve=HOST:PORT TOTAL` listens there
 * (port 0: the kernel picks; the line `tcp_stream listening port=N` says which), accepts one
 * connection and receives; `--connect=HOST:PORT TOTAL BLOCK...` sends. The sender first tells the
 * receiver the total, the passes and the block sizes (a header the receiver checks against its own
 * TOTAL and its bounds before it receives anything), then both run as above.
 *
 * Usage: tcp_stream TOTAL BLOCK [BLOCK ...] [--passes=N]
 *        tcp_stream --serve=HOST:PORT TOTAL
 *        tcp_stream --connect=HOST:PORT TOTAL BLOCK [BLOCK ...] [--passes=N]
 * Build: gcc -O2 -o tcp_stream tcp_stream.c
 * Prints one line about the sockets, then one per block size:
 *   tcp_stream loopback SO_SNDBUF=16384 SO_RCVBUF=131072 TCP_NODELAY=1 (kernel defaults, autotuned)
 *   tcp_stream send block=32768 total=268435456 passes=5 mean 1.234 GB/s best 1.456 GB/s */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
#define RUN_LIMIT_SECONDS 900
#define SOCKET_TIMEOUT_SECONDS 60

#define READY 'r'
#define GOOD 'y'
#define BAD 'n'

static const char *role = "sender";

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "tcp_stream (%s): %s: %s\n", role, what, why);
    exit(2);
}

static double seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

static void send_all(int socket, const unsigned char *data, size_t length)
{
    while (length > 0) {
        ssize_t sent = send(socket, data, length, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR) {
            continue;
        }
        if (sent <= 0) {
            fail("sending", errno == EAGAIN ? "timed out" : strerror(errno));
        }
        data += sent;
        length -= (size_t) sent;
    }
}

static void receive_all(int socket, unsigned char *data, size_t length)
{
    while (length > 0) {
        ssize_t got = recv(socket, data, length, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            fail("receiving", got == 0 ? "the peer closed the connection" : errno == EAGAIN ? "timed out" : strerror(errno));
        }
        data += got;
        length -= (size_t) got;
    }
}

static unsigned char receive_byte(int socket)
{
    unsigned char byte;
    receive_all(socket, &byte, 1);
    return byte;
}

static void send_byte(int socket, unsigned char byte)
{
    send_all(socket, &byte, 1);
}

/* every 8-byte word differs from its neighbours and from the same word of another seed */
static uint64_t pattern(size_t word, uint64_t seed)
{
    return (word * 0x9E3779B97F4A7C15ULL + 1) ^ (seed * 0xD6E8FEB86659FD93ULL);
}

static void fill(unsigned char *region, size_t total, uint64_t seed)
{
    uint64_t *words = (uint64_t *) region;
    for (size_t i = 0; i < total / 8; i++) {
        words[i] = pattern(i, seed);
    }
}

static int matches(const unsigned char *region, size_t total, uint64_t seed)
{
    const uint64_t *words = (const uint64_t *) region;
    for (size_t i = 0; i < total / 8; i++) {
        if (words[i] != pattern(i, seed)) {
            return 0;
        }
    }
    return 1;
}

static void configure(int socket)
{
    int on = 1;
    struct timeval timeout = { .tv_sec = SOCKET_TIMEOUT_SECONDS };
    if (setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0
            || setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0
            || setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0) {
        fail("setsockopt", strerror(errno));
    }
}

static unsigned char *map(size_t total)
{
    unsigned char *region = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) {
        fail("mmap", strerror(errno));
    }
    memset(region, 0, total);
    return region;
}

static void receiver(int connection, size_t total, const size_t *blocks, int count, int passes)
{
    role = "receiver";
    configure(connection);
    unsigned char *destination = map(total);
    for (int b = 0; b < count; b++) {
        for (int pass = 0; pass <= passes; pass++) {
            send_byte(connection, READY);
            for (size_t offset = 0; offset < total; offset += blocks[b]) {
                receive_all(connection, destination + offset, blocks[b]);
            }
            int checked = pass < passes || matches(destination, total, (uint64_t) b + 1);
            send_byte(connection, checked ? GOOD : BAD);
        }
    }
    close(connection);
    exit(0);
}

static uint64_t get64(const unsigned char *bytes)
{
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) {
        value = value << 8 | bytes[i];
    }
    return value;
}

static void put64(unsigned char *bytes, uint64_t value)
{
    for (int i = 7; i >= 0; i--) {
        bytes[i] = (unsigned char) value;
        value >>= 8;
    }
}

/* the sender's header, untrusted: total, passes, count, then count block sizes, 8 bytes each */
static void remote_receiver(int connection, size_t total)
{
    role = "receiver";
    configure(connection);
    unsigned char header[3 * 8];
    receive_all(connection, header, sizeof header);
    uint64_t sent_total = get64(header);
    uint64_t passes = get64(header + 8);
    uint64_t count = get64(header + 16);
    if (sent_total != total || passes < 1 || passes > 1000 || count < 1 || count > MAX_BLOCK_SIZES) {
        fprintf(stderr, "tcp_stream (receiver): header total=%llu passes=%llu blocks=%llu refused (expected total %zu, 1 to 1000 passes, 1 to %d blocks)\n",
                (unsigned long long) sent_total, (unsigned long long) passes, (unsigned long long) count, total, MAX_BLOCK_SIZES);
        exit(2);
    }
    size_t blocks[MAX_BLOCK_SIZES];
    for (uint64_t b = 0; b < count; b++) {
        unsigned char size[8];
        receive_all(connection, size, sizeof size);
        uint64_t block = get64(size);
        if (block == 0 || total % block != 0) {
            fprintf(stderr, "tcp_stream (receiver): block %llu does not divide the total %zu\n", (unsigned long long) block, total);
            exit(2);
        }
        blocks[b] = (size_t) block;
    }
    receiver(connection, total, blocks, (int) count, (int) passes);
}

static int resolve(const char *spec, struct sockaddr_storage *address, socklen_t *length)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (colon == NULL || colon == spec || (size_t) (colon - spec) >= sizeof host) {
        return -1;
    }
    memcpy(host, spec, (size_t) (colon - spec));
    host[colon - spec] = '\0';
    char *bare = host;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        host[strlen(host) - 1] = '\0';
        bare = host + 1;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *found;
    if (getaddrinfo(bare, colon + 1, &hints, &found) != 0) {
        return -1;
    }
    memcpy(address, found->ai_addr, found->ai_addrlen);
    *length = found->ai_addrlen;
    freeaddrinfo(found);
    return 0;
}

static int sender(int connection, const char *where, size_t total, const size_t *blocks, int count, int passes)
{
    configure(connection);
    int sendBuffer = 0;
    int receiveBuffer = 0;
    socklen_t length = sizeof sendBuffer;
    getsockopt(connection, SOL_SOCKET, SO_SNDBUF, &sendBuffer, &length);
    length = sizeof receiveBuffer;
    getsockopt(connection, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, &length);
    printf("tcp_stream %s SO_SNDBUF=%d SO_RCVBUF=%d TCP_NODELAY=1 (kernel defaults, autotuned)\n", where, sendBuffer, receiveBuffer);
    fflush(stdout);

    unsigned char *source = map(total);
    fill(source, total, 0);
    for (int b = 0; b < count; b++) {
        double sum = 0;
        double best = 0;
        for (int pass = 0; pass <= passes; pass++) {
            if (pass == passes) {
                fill(source, total, (uint64_t) b + 1);
            }
            if (receive_byte(connection) != READY) {
                fail("waiting for the receiver", "unexpected reply");
            }
            double start = seconds();
            for (size_t offset = 0; offset < total; offset += blocks[b]) {
                send_all(connection, source + offset, blocks[b]);
            }
            unsigned char verdict = receive_byte(connection);
            double elapsed = seconds() - start;
            if (verdict != GOOD) {
                fprintf(stderr, "tcp_stream: block=%zu: the receiver's bytes differ from what was sent\n", blocks[b]);
                return 3;
            }
            if (pass > 0) {
                double rate = total / elapsed / 1e9;
                sum += rate;
                best = rate > best ? rate : best;
            }
        }
        printf("tcp_stream send block=%zu total=%zu passes=%d mean %.3f GB/s best %.3f GB/s\n", blocks[b], total, passes, sum / passes, best);
        fflush(stdout);
    }
    close(connection);
    return 0;
}

/* one side of a stream between two hosts: the receiver listens (--serve), the sender connects (--connect) */
static int two_hosts(const char *serve, const char *peer, size_t total, const size_t *blocks, int count, int passes)
{
    struct sockaddr_storage address;
    socklen_t length;
    alarm(RUN_LIMIT_SECONDS);
    if (resolve(serve != NULL ? serve : peer, &address, &length) != 0) {
        fprintf(stderr, "tcp_stream: %s is not HOST:PORT of a resolvable host\n", serve != NULL ? serve : peer);
        return 1;
    }
    int endpoint = socket(address.ss_family, SOCK_STREAM, 0);
    if (endpoint < 0) {
        fail("socket", strerror(errno));
    }
    if (serve != NULL) {
        role = "receiver";
        int on = 1;
        setsockopt(endpoint, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (bind(endpoint, (struct sockaddr *) &address, length) != 0 || listen(endpoint, 1) != 0
                || getsockname(endpoint, (struct sockaddr *) &address, &length) != 0) {
            fail("listen", strerror(errno));
        }
        int port = address.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *) &address)->sin6_port) : ntohs(((struct sockaddr_in *) &address)->sin_port);
        printf("tcp_stream listening port=%d\n", port);
        fflush(stdout);
        int connection = accept(endpoint, NULL, NULL);
        if (connection < 0) {
            fail("accept", strerror(errno));
        }
        close(endpoint);
        remote_receiver(connection, total);
    }
    if (connect(endpoint, (struct sockaddr *) &address, length) != 0) {
        fail("connect", strerror(errno));
    }
    unsigned char header[3 * 8];
    put64(header, total);
    put64(header + 8, (uint64_t) passes);
    put64(header + 16, (uint64_t) count);
    send_all(endpoint, header, sizeof header);
    for (int b = 0; b < count; b++) {
        unsigned char size[8];
        put64(size, blocks[b]);
        send_all(endpoint, size, sizeof size);
    }
    char where[300];
    snprintf(where, sizeof where, "to %s", peer);
    return sender(endpoint, where, total, blocks, count, passes);
}

int main(int argc, char **argv)
{
    size_t total = 0;
    size_t blocks[MAX_BLOCK_SIZES];
    int count = 0;
    int passes = 5;
    const char *serve = NULL;
    const char *peer = NULL;
    for (int arg = 1; arg < argc; arg++) {
        char *end;
        if (strncmp(argv[arg], "--serve=", 8) == 0) {
            serve = argv[arg] + 8;
            continue;
        }
        if (strncmp(argv[arg], "--connect=", 10) == 0) {
            peer = argv[arg] + 10;
            continue;
        }
        if (strncmp(argv[arg], "--passes=", 9) == 0) {
            passes = (int) strtol(argv[arg] + 9, &end, 10);
            if (*end != '\0' || passes < 1 || passes > 1000) {
                fprintf(stderr, "--passes=%s must be a number from 1 to 1000\n", argv[arg] + 9);
                return 1;
            }
            continue;
        }
        unsigned long long value = strtoull(argv[arg], &end, 10);
        if (*end != '\0' || value == 0) {
            fprintf(stderr, "%s is not a positive number of bytes\n", argv[arg]);
            return 1;
        }
        if (total == 0) {
            total = (size_t) value;
        }
        else if (count == MAX_BLOCK_SIZES) {
            fprintf(stderr, "at most %d block sizes\n", MAX_BLOCK_SIZES);
            return 1;
        }
        else {
            blocks[count++] = (size_t) value;
        }
    }
    if (total == 0 || (count == 0) != (serve != NULL) || (serve != NULL && peer != NULL)) {
        fprintf(stderr, "usage: tcp_stream TOTAL BLOCK [BLOCK ...] [--passes=N]\n"
                "       tcp_stream --serve=HOST:PORT TOTAL\n"
                "       tcp_stream --connect=HOST:PORT TOTAL BLOCK [BLOCK ...] [--passes=N]\n");
        return 1;
    }
    if (total % 8 != 0) {
        fprintf(stderr, "total %zu must be a multiple of 8 bytes\n", total);
        return 1;
    }
    for (int b = 0; b < count; b++) {
        if (total % blocks[b] != 0) {
            fprintf(stderr, "block %zu must divide the total %zu\n", blocks[b], total);
            return 1;
        }
    }

    if (serve != NULL || peer != NULL) {
        return two_hosts(serve, peer, total, blocks, count, passes);
    }

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t length = sizeof address;
    if (listener < 0 || bind(listener, (struct sockaddr *) &address, sizeof address) != 0 || listen(listener, 1) != 0
            || getsockname(listener, (struct sockaddr *) &address, &length) != 0) {
        fail("listen on 127.0.0.1", strerror(errno));
    }
    alarm(RUN_LIMIT_SECONDS);
    pid_t child = fork();
    if (child < 0) {
        fail("fork", strerror(errno));
    }
    if (child == 0) {
        // the receiver must not outlive a sender that is killed
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) {
            exit(2);
        }
        int connection = accept(listener, NULL, NULL);
        if (connection < 0) {
            fail("accept", strerror(errno));
        }
        close(listener);
        receiver(connection, total, blocks, count, passes);
    }
    close(listener);
    int connection = socket(AF_INET, SOCK_STREAM, 0);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connection < 0 || connect(connection, (struct sockaddr *) &address, sizeof address) != 0) {
        fail("connect to 127.0.0.1", strerror(errno));
    }
    int result = sender(connection, "loopback", total, blocks, count, passes);
    if (result != 0) {
        kill(child, SIGKILL);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "tcp_stream: the receiver did not end cleanly\n");
        return result != 0 ? result : 2;
    }
    return result;
}
