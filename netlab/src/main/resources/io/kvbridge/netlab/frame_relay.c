/* Delay and loss for one virtual host's cable where the kernel has no netem qdisc.
 *
 * The relay runs in the switch namespace between the switch's end of a host's cable (PORT, a veth
 * that VirtualHosts takes off the bridge) and a TAP device (TAP, which this program creates and
 * VirtualHosts puts on the bridge in its place). Every frame read on one side is written to the
 * other DELAY_MS later, unless it is dropped: with probability LOSS_PERCENT / 100, or because its
 * direction's queue is full. Both directions are relayed, so a round trip gains 2 * DELAY_MS.
 *
 * Large TCP segments (GSO) pass whole: PORT is read and written through an AF_PACKET socket with
 * PACKET_VNET_HDR and the TAP is opened with IFF_VNET_HDR and offloads (TUNSETOFFLOAD), so each
 * frame comes with, and is written with, its virtio_net_hdr (segmentation and checksum offsets).
 * A GSO frame counts as one frame, as netem counts it on a veth. Frames the switch namespace
 * sends on PORT itself (PACKET_OUTGOING) are not relayed.
 *
 * Usage: frame_relay PORT TAP DELAY_MS LOSS_PERCENT [--seed=N] [--watch-stdin]
 *   --seed=N       the loss draws' seed (default: from getrandom).
 *   --watch-stdin  exit when stdin ends (the parent is gone); the line "report N" on stdin makes it
 *                  print its counters with that number.
 * Build: gcc -O2 -o frame_relay frame_relay.c
 * Prints once set up, then per report (and once more when it ends on SIGTERM or SIGINT):
 *   frame_relay ready port=port0 tap=tap0 mtu=1500 delay_ms=5 loss_percent=0.050
 *   frame_relay report=N to_bridge received=R forwarded=F forwarded_bytes=B lost=L overflowed=O failed=E truncated=T
 *     queued=Q to_host received=... (the same fields; bytes count Ethernet headers, not the virtio_net_hdr)
 * Exits 2 with a line on stderr naming what failed when it cannot be set up. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* a GSO frame is at most 64 KiB of IP packet; twice that leaves room for larger gso_max_size */
#define FRAME_BUFFER (256 * 1024)
#define QUEUE_FRAMES 65536
#define QUEUE_BYTES (64L * 1024 * 1024)
#define SOCKET_BUFFER (8 * 1024 * 1024)
#define BATCH 64
#define MAX_DELAY_MS 60000

struct frame
{
    struct frame *next;
    uint64_t due;
    size_t length;
    unsigned char data[];
};

struct direction
{
    const char *name;
    struct frame *head;
    struct frame *tail;
    long queued_frames;
    long queued_bytes;
    long received;
    long forwarded;
    long forwarded_bytes;
    long lost;
    long overflowed;
    long failed;
    long truncated;
};

static volatile sig_atomic_t stopping;
static uint64_t random_state;

static void fail(const char *what, const char *why)
{
    fprintf(stderr, "frame_relay: %s: %s\n", what, why);
    exit(2);
}

static void on_stop(int signal)
{
    (void) signal;
    stopping = 1;
}

static uint64_t now_nanos(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t) now.tv_sec * 1000000000ULL + (uint64_t) now.tv_nsec;
}

/* xorshift64*: fast, and good enough to drop frames independently of one another */
static double next_random(void)
{
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return (double) ((random_state * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static int interface_index(int socket, const char *name)
{
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strncpy(request.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(socket, SIOCGIFINDEX, &request) < 0) {
        fprintf(stderr, "frame_relay: interface %s: %s\n", name, strerror(errno));
        exit(2);
    }
    return request.ifr_ifindex;
}

static int open_port(const char *port, int *mtu)
{
    /* protocol 0 until bound, so that no frame of another interface is queued before the bind */
    int socket_fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (socket_fd < 0) {
        fail("socket(AF_PACKET)", strerror(errno));
    }
    int on = 1;
    if (setsockopt(socket_fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof on) < 0) {
        fail("setsockopt(PACKET_VNET_HDR)", strerror(errno));
    }
    /* older kernels lack it; the PACKET_OUTGOING check below then does the same */
    setsockopt(socket_fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &on, sizeof on);
    int size = SOCKET_BUFFER;
    if (setsockopt(socket_fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0
            || setsockopt(socket_fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) < 0) {
        fail("setsockopt(SO_RCVBUFFORCE, SO_SNDBUFFORCE)", strerror(errno));
    }
    struct sockaddr_ll address;
    memset(&address, 0, sizeof address);
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(ETH_P_ALL);
    address.sll_ifindex = interface_index(socket_fd, port);
    if (bind(socket_fd, (struct sockaddr *) &address, sizeof address) < 0) {
        fail("bind(AF_PACKET)", strerror(errno));
    }
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strncpy(request.ifr_name, port, IFNAMSIZ - 1);
    if (ioctl(socket_fd, SIOCGIFMTU, &request) < 0) {
        fail("ioctl(SIOCGIFMTU)", strerror(errno));
    }
    *mtu = request.ifr_mtu;
    return socket_fd;
}

static int open_tap(const char *tap, int mtu)
{
    int tap_fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (tap_fd < 0) {
        fail("open(/dev/net/tun)", strerror(errno));
    }
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strncpy(request.ifr_name, tap, IFNAMSIZ - 1);
    request.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
    if (ioctl(tap_fd, TUNSETIFF, &request) < 0) {
        fail("ioctl(TUNSETIFF)", strerror(errno));
    }
    int header = sizeof(struct virtio_net_hdr);
    if (ioctl(tap_fd, TUNSETVNETHDRSZ, &header) < 0) {
        fail("ioctl(TUNSETVNETHDRSZ)", strerror(errno));
    }
    /* the bridge then hands the TAP checksum-partial TSO frames instead of segmenting them */
    unsigned int offloads = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
    if (ioctl(tap_fd, TUNSETOFFLOAD, offloads) < 0) {
        fail("ioctl(TUNSETOFFLOAD)", strerror(errno));
    }
    int control = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (control < 0) {
        fail("socket(AF_INET)", strerror(errno));
    }
    memset(&request, 0, sizeof request);
    strncpy(request.ifr_name, tap, IFNAMSIZ - 1);
    request.ifr_mtu = mtu;
    if (ioctl(control, SIOCSIFMTU, &request) < 0) {
        fail("ioctl(SIOCSIFMTU)", strerror(errno));
    }
    close(control);
    return tap_fd;
}

static void enqueue(struct direction *direction, const unsigned char *data, size_t length, uint64_t delay, double loss)
{
    direction->received++;
    if (loss > 0 && next_random() < loss) {
        direction->lost++;
        return;
    }
    if (direction->queued_frames >= QUEUE_FRAMES || direction->queued_bytes + (long) length > QUEUE_BYTES) {
        direction->overflowed++;
        return;
    }
    struct frame *frame = malloc(sizeof(struct frame) + length);
    if (frame == NULL) {
        direction->overflowed++;
        return;
    }
    frame->next = NULL;
    frame->due = now_nanos() + delay;
    frame->length = length;
    memcpy(frame->data, data, length);
    if (direction->tail == NULL) {
        direction->head = frame;
    }
    else {
        direction->tail->next = frame;
    }
    direction->tail = frame;
    direction->queued_frames++;
    direction->queued_bytes += (long) length;
}

/* the delay is the same for every frame, so the queue is in due order and only its head can be due */
static void flush(struct direction *direction, int out, int out_is_socket, uint64_t now)
{
    while (direction->head != NULL && direction->head->due <= now) {
        struct frame *frame = direction->head;
        ssize_t written = out_is_socket ? send(out, frame->data, frame->length, MSG_DONTWAIT) : write(out, frame->data, frame->length);
        if (written == (ssize_t) frame->length) {
            direction->forwarded++;
            direction->forwarded_bytes += (long) (frame->length - sizeof(struct virtio_net_hdr));
        }
        else {
            direction->failed++;
        }
        direction->head = frame->next;
        if (direction->head == NULL) {
            direction->tail = NULL;
        }
        direction->queued_frames--;
        direction->queued_bytes -= (long) frame->length;
        free(frame);
    }
}

static void read_port(int port, struct direction *direction, unsigned char *buffer, uint64_t delay, double loss)
{
    for (int i = 0; i < BATCH; i++) {
        struct sockaddr_ll from;
        socklen_t from_length = sizeof from;
        ssize_t got = recvfrom(port, buffer, FRAME_BUFFER, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *) &from, &from_length);
        if (got < 0) {
            return;
        }
        if (from.sll_pkttype == PACKET_OUTGOING) {
            continue;
        }
        if (got > FRAME_BUFFER) {
            direction->received++;
            direction->truncated++;
            continue;
        }
        enqueue(direction, buffer, (size_t) got, delay, loss);
    }
}

static void read_tap(int tap, struct direction *direction, unsigned char *buffer, uint64_t delay, double loss)
{
    for (int i = 0; i < BATCH; i++) {
        ssize_t got = read(tap, buffer, FRAME_BUFFER);
        if (got < 0) {
            return;
        }
        if ((size_t) got < sizeof(struct virtio_net_hdr)) {
            direction->received++;
            direction->truncated++;
            continue;
        }
        enqueue(direction, buffer, (size_t) got, delay, loss);
    }
}

static void print_direction(const struct direction *direction)
{
    printf(" %s received=%ld forwarded=%ld forwarded_bytes=%ld lost=%ld overflowed=%ld failed=%ld truncated=%ld queued=%ld", direction->name,
            direction->received, direction->forwarded, direction->forwarded_bytes, direction->lost, direction->overflowed, direction->failed, direction->truncated, direction->queued_frames);
}

static void report(const char *number, const struct direction *to_bridge, const struct direction *to_host)
{
    printf("frame_relay report=%s", number);
    print_direction(to_bridge);
    print_direction(to_host);
    printf("\n");
    fflush(stdout);
}

/* reads what arrived on stdin; returns 0 once it has ended */
static int read_commands(char *line, size_t *used, size_t capacity, const struct direction *to_bridge, const struct direction *to_host)
{
    ssize_t got = read(STDIN_FILENO, line + *used, capacity - 1 - *used);
    if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        return 0;
    }
    if (got < 0) {
        return 1;
    }
    *used += (size_t) got;
    line[*used] = '\0';
    char *end;
    while ((end = strchr(line, '\n')) != NULL) {
        *end = '\0';
        unsigned long number;
        char extra;
        if (sscanf(line, "report %lu%c", &number, &extra) == 1) {
            char text[32];
            snprintf(text, sizeof text, "%lu", number);
            report(text, to_bridge, to_host);
        }
        else {
            fprintf(stderr, "frame_relay: ignored the command '%s' (only 'report N' is known)\n", line);
        }
        size_t rest = *used - (size_t) (end + 1 - line);
        memmove(line, end + 1, rest + 1);
        *used = rest;
    }
    if (*used == capacity - 1) {
        *used = 0;
    }
    return 1;
}

static uint64_t earliest_due(const struct direction *a, const struct direction *b)
{
    uint64_t due = UINT64_MAX;
    if (a->head != NULL) {
        due = a->head->due;
    }
    if (b->head != NULL && b->head->due < due) {
        due = b->head->due;
    }
    return due;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fail("usage", "frame_relay PORT TAP DELAY_MS LOSS_PERCENT [--seed=N] [--watch-stdin]");
    }
    const char *port_name = argv[1];
    const char *tap_name = argv[2];
    if (strlen(port_name) == 0 || strlen(port_name) >= IFNAMSIZ || strlen(tap_name) == 0 || strlen(tap_name) >= IFNAMSIZ) {
        fail("usage", "PORT and TAP must be interface names of 1 to 15 characters");
    }
    char *end;
    errno = 0;
    long delay_ms = strtol(argv[3], &end, 10);
    if (errno != 0 || *end != '\0' || delay_ms < 0 || delay_ms > MAX_DELAY_MS) {
        fprintf(stderr, "frame_relay: DELAY_MS=%s is not a whole number of milliseconds from 0 to %d\n", argv[3], MAX_DELAY_MS);
        return 2;
    }
    double loss_percent = strtod(argv[4], &end);
    if (*end != '\0' || !(loss_percent >= 0 && loss_percent <= 100)) {
        fprintf(stderr, "frame_relay: LOSS_PERCENT=%s is not a number from 0 to 100\n", argv[4]);
        return 2;
    }
    int watch_stdin = 0;
    int seeded = 0;
    for (int i = 5; i < argc; i++) {
        if (strcmp(argv[i], "--watch-stdin") == 0) {
            watch_stdin = 1;
        }
        else if (strncmp(argv[i], "--seed=", 7) == 0) {
            random_state = strtoull(argv[i] + 7, &end, 10);
            if (*end != '\0') {
                fprintf(stderr, "frame_relay: %s is not --seed=<whole number>\n", argv[i]);
                return 2;
            }
            seeded = 1;
        }
        else {
            fprintf(stderr, "frame_relay: unknown option %s (known: --seed=N, --watch-stdin)\n", argv[i]);
            return 2;
        }
    }
    if (!seeded && getrandom(&random_state, sizeof random_state, 0) != sizeof random_state) {
        fail("getrandom", strerror(errno));
    }
    if (random_state == 0) {
        random_state = 0x9E3779B97F4A7C15ULL;
    }

    int mtu;
    int port = open_port(port_name, &mtu);
    int tap = open_tap(tap_name, mtu);
    unsigned char *buffer = malloc(FRAME_BUFFER);
    if (buffer == NULL) {
        fail("malloc", "no memory for the frame buffer");
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_stop;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* the signals arrive only inside ppoll, so that none is lost between the check and the wait */
    sigset_t blocked;
    sigset_t waiting;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGINT);
    sigprocmask(SIG_BLOCK, &blocked, &waiting);
    sigdelset(&waiting, SIGTERM);
    sigdelset(&waiting, SIGINT);

    printf("frame_relay ready port=%s tap=%s mtu=%d delay_ms=%ld loss_percent=%.3f\n", port_name, tap_name, mtu, delay_ms, loss_percent);
    fflush(stdout);

    struct direction to_bridge = { .name = "to_bridge" };
    struct direction to_host = { .name = "to_host" };
    uint64_t delay = (uint64_t) delay_ms * 1000000ULL;
    double loss = loss_percent / 100.0;
    char commands[256];
    size_t commands_used = 0;
    struct pollfd waits[3] = {
        { .fd = port, .events = POLLIN },
        { .fd = tap, .events = POLLIN },
        { .fd = STDIN_FILENO, .events = POLLIN },
    };
    while (!stopping) {
        uint64_t due = earliest_due(&to_bridge, &to_host);
        struct timespec timeout = { .tv_sec = 1 };
        if (due != UINT64_MAX) {
            uint64_t now = now_nanos();
            uint64_t wait = due > now ? due - now : 0;
            timeout.tv_sec = (time_t) (wait / 1000000000ULL);
            timeout.tv_nsec = (long) (wait % 1000000000ULL);
        }
        int ready = ppoll(waits, watch_stdin ? 3 : 2, &timeout, &waiting);
        if (ready < 0 && errno != EINTR) {
            fail("ppoll", strerror(errno));
        }
        if (ready > 0) {
            if (waits[0].revents & POLLIN) {
                read_port(port, &to_bridge, buffer, delay, loss);
            }
            if (waits[1].revents & POLLIN) {
                read_tap(tap, &to_host, buffer, delay, loss);
            }
            if (waits[0].revents & POLLERR) {
                /* the port went down (a cut cable): take the error and go on; the socket relays again once it is up */
                int error;
                socklen_t length = sizeof error;
                getsockopt(port, SOL_SOCKET, SO_ERROR, &error, &length);
            }
            if ((waits[0].revents & POLLNVAL) || (waits[1].revents & (POLLERR | POLLNVAL | POLLHUP))) {
                fail("poll", "the port's socket or the TAP device failed (was it deleted?)");
            }
            if (watch_stdin && (waits[2].revents & (POLLIN | POLLHUP | POLLERR))
                    && !read_commands(commands, &commands_used, sizeof commands, &to_bridge, &to_host)) {
                break;
            }
        }
        uint64_t now = now_nanos();
        flush(&to_bridge, tap, 0, now);
        flush(&to_host, port, 1, now);
    }
    report("final", &to_bridge, &to_host);
    return 0;
}
