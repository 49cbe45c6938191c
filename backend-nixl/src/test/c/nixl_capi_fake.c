/*
 * A functional fake of NIXL's C API (libnixl_capi.so) for tests: same symbol names and ABI, our own
 * implementation. Two agents in one process copy with memcpy; agents in two processes talk over a
 * Unix-domain stream socket, one service thread per accepted connection, frames handled strictly in
 * order so a notification is queued only after the data it follows. nixl_capi_is_stub() returns
 * true, so the fake can never pass for the real library.
 *
 * Environment (read when the library loads; tests may also call nixl_fake_set_option):
 *   NIXL_FAKE_API=head|1.4            status dialect (1.4 collapses NOT_FOUND and deep errors to -2)
 *   NIXL_FAKE_COMPLETION=async|inline|polls:N
 *   NIXL_FAKE_VRAM_AS_HOST=1          accept VRAM descriptors as host addresses
 *   NIXL_FAKE_MERGE=runs|address      merge index runs as NIXL 1.4.0 does (default) or as 0.10.1..1.3 did
 *   NIXL_FAKE_FAULTS=fn:nth:status,...  fail the nth next call of fn with status
 * Faults with special names: service_stall (the target stops serving at its nth data frame),
 * drop_peer (the nth in-process copy finds its peer gone), destroy_agent_stall (the nth
 * destroy_agent blocks `status` milliseconds first, as NIXL 1.4.0's did not return while its UCX
 * progress thread spun in ucp_worker_arm under UCX_MM_ERROR_HANDLING=y).
 *
 * Build: gcc -std=c11 -shared -fPIC -pthread -fvisibility=hidden -Wl,-soname,libnixl_capi.so
 * Add -DFAKE_API_1_4 for the 96-symbol variant of NIXL 0.10.1 .. 1.4 (1.4 statuses by default).
 */
#define _GNU_SOURCE
#include "nixl_capi_abi.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

/* ------------------------------------------------------------------ statuses and dialects */

enum
{
    ST_OK = 0,
    ST_INPROG = 1,
    ST_INVAL = -1,
    ST_BACKEND = -2,
    ST_STATE = -3,
    ST_NOTELEM = -5,
    ST_NOTFOUND = -6,
    /* NIXL's own INVALID_PARAM from deep inside a call: -1 at HEAD, -2 in 1.4 and earlier */
    ST_DEEP_INVAL = -101
};

#ifdef FAKE_API_1_4
static int g_api14 = 1;
#else
static int g_api14 = 0;
#endif

static int ret(int status)
{
    if (status == ST_DEEP_INVAL) {
        return g_api14 ? ST_BACKEND : ST_INVAL;
    }
    if (g_api14 && status != ST_OK && status != ST_INPROG && status != ST_INVAL && status != ST_BACKEND
            && status != ST_STATE && status != ST_NOTELEM) {
        return ST_BACKEND;
    }
    return status;
}

/* ------------------------------------------------------------------ handle checking */

enum
{
    M_AGENT = 0x4e584101,
    M_PARAMS,
    M_MEMLIST,
    M_STRLIST,
    M_BACKEND,
    M_OPT,
    M_ITER,
    M_XDLIST,
    M_RDLIST,
    M_REMDLIST,
    M_PREP,
    M_REQ,
    M_NMAP,
    M_QRESP,
    M_DEAD = 0x0dead0ff
};

static atomic_ulong s_live_agents;
static atomic_ulong s_live_requests;
static atomic_ulong s_live_prepared;
static atomic_ulong s_live_objects;
static atomic_ulong s_bad_handles;
static atomic_ulong s_notifications;
static atomic_ulong s_posted;
static atomic_ulong s_frames;

/* destroyed handles are kept readable for a while so a stale one is reported, not dereferenced */
#define QUARANTINE 4096
static void *g_quarantine[QUARANTINE];
static size_t g_quarantine_next;
static pthread_mutex_t g_quarantine_lock = PTHREAD_MUTEX_INITIALIZER;

static void retire(void *object)
{
    *(uint32_t *) object = M_DEAD;
    pthread_mutex_lock(&g_quarantine_lock);
    void *oldest = g_quarantine[g_quarantine_next];
    g_quarantine[g_quarantine_next] = object;
    g_quarantine_next = (g_quarantine_next + 1) % QUARANTINE;
    pthread_mutex_unlock(&g_quarantine_lock);
    free(oldest);
}

static int misuse(const char *function, const char *what)
{
    atomic_fetch_add(&s_bad_handles, 1);
    fprintf(stderr, "nixl-fake: %s: %s\n", function, what);
    return ST_INVAL;
}

#define CHECK_NULL(p) \
    do { \
        if ((p) == NULL) { \
            return ret(ST_INVAL); \
        } \
    } while (0)

#define CHECK_HANDLE(h, m) \
    do { \
        CHECK_NULL(h); \
        if (*(const uint32_t *) (h) != (uint32_t) (m)) { \
            return ret(misuse(__func__, "stale or wrong handle")); \
        } \
    } while (0)

static void *alloc_object(size_t size, uint32_t magic)
{
    void *object = calloc(1, size);
    if (object != NULL) {
        *(uint32_t *) object = magic;
        atomic_fetch_add(&s_live_objects, 1);
    }
    return object;
}

static void retire_object(void *object)
{
    atomic_fetch_sub(&s_live_objects, 1);
    retire(object);
}

/* ------------------------------------------------------------------ options and faults */

enum
{
    COMPLETE_ASYNC,
    COMPLETE_INLINE,
    COMPLETE_POLLS
};

static int g_completion = COMPLETE_ASYNC;
/* how make_xfer_req merges index runs: as NIXL 1.4.0 does (stride runs), or as 0.10.1 to 1.3 did (addresses) */
enum { MERGE_RUNS, MERGE_ADDRESS };
static int g_merge = MERGE_RUNS;
static int g_completion_polls;
static int g_vram_as_host;

struct fault
{
    char function[64];
    int countdown;
    int status;
};

#define MAX_FAULTS 32
static struct fault g_faults[MAX_FAULTS];
static pthread_mutex_t g_fault_lock = PTHREAD_MUTEX_INITIALIZER;

/* Returns 1 and the status when this call of `function` is the one a fault names (one-shot). */
static int fault_hit(const char *function, int *status)
{
    int hit = 0;
    pthread_mutex_lock(&g_fault_lock);
    for (int i = 0; i < MAX_FAULTS; i++) {
        if (g_faults[i].countdown > 0 && strcmp(g_faults[i].function, function) == 0) {
            if (--g_faults[i].countdown == 0) {
                *status = g_faults[i].status;
                hit = 1;
            }
            break;
        }
    }
    pthread_mutex_unlock(&g_fault_lock);
    return hit;
}

#define FAULT(name) \
    do { \
        int fault_status_; \
        if (fault_hit(name, &fault_status_)) { \
            return fault_status_; \
        } \
    } while (0)

API int nixl_fake_set_fault(const char *function, int nth, int status)
{
    if (function == NULL || nth <= 0 || strlen(function) >= sizeof(g_faults[0].function)) {
        return -1;
    }
    pthread_mutex_lock(&g_fault_lock);
    int slot = -1;
    for (int i = 0; i < MAX_FAULTS; i++) {
        if (g_faults[i].countdown > 0 && strcmp(g_faults[i].function, function) == 0) {
            slot = i;
            break;
        }
        if (slot < 0 && g_faults[i].countdown == 0) {
            slot = i;
        }
    }
    if (slot >= 0) {
        strcpy(g_faults[slot].function, function);
        g_faults[slot].countdown = nth;
        g_faults[slot].status = status;
    }
    pthread_mutex_unlock(&g_fault_lock);
    return slot >= 0 ? 0 : -1;
}

API void nixl_fake_reset_faults(void)
{
    pthread_mutex_lock(&g_fault_lock);
    memset(g_faults, 0, sizeof(g_faults));
    pthread_mutex_unlock(&g_fault_lock);
}

API int nixl_fake_set_option(const char *key, const char *value)
{
    if (key == NULL || value == NULL) {
        return -1;
    }
    if (strcmp(key, "completion") == 0) {
        if (strcmp(value, "async") == 0) {
            g_completion = COMPLETE_ASYNC;
        }
        else if (strcmp(value, "inline") == 0) {
            g_completion = COMPLETE_INLINE;
        }
        else if (strncmp(value, "polls:", 6) == 0 && atoi(value + 6) >= 0) {
            g_completion = COMPLETE_POLLS;
            g_completion_polls = atoi(value + 6);
        }
        else {
            return -1;
        }
        return 0;
    }
    if (strcmp(key, "api") == 0) {
        if (strcmp(value, "head") == 0) {
            g_api14 = 0;
        }
        else if (strcmp(value, "1.4") == 0) {
            g_api14 = 1;
        }
        else {
            return -1;
        }
        return 0;
    }
    if (strcmp(key, "merge") == 0) {
        if (strcmp(value, "runs") == 0) {
            g_merge = MERGE_RUNS;
        }
        else if (strcmp(value, "address") == 0) {
            g_merge = MERGE_ADDRESS;
        }
        else {
            return -1;
        }
        return 0;
    }
    if (strcmp(key, "vram_as_host") == 0) {
        g_vram_as_host = strcmp(value, "1") == 0;
        return 0;
    }
    return -1;
}

API const char *nixl_fake_info(void)
{
#ifdef FAKE_API_1_4
    return "nixl-capi-fake 1 api=1.4 symbols=96";
#else
    return "nixl-capi-fake 1 api=head symbols=102";
#endif
}

API int nixl_fake_stats(struct nixl_fake_stats *out)
{
    if (out == NULL) {
        return -1;
    }
    out->live_agents = atomic_load(&s_live_agents);
    out->live_requests = atomic_load(&s_live_requests);
    out->live_prepared = atomic_load(&s_live_prepared);
    out->live_objects = atomic_load(&s_live_objects);
    out->bad_handles = atomic_load(&s_bad_handles);
    out->notifications_sent = atomic_load(&s_notifications);
    out->transfers_posted = atomic_load(&s_posted);
    out->frames_sent = atomic_load(&s_frames);
    return 0;
}

static uint32_t g_crc_table[256];

__attribute__((constructor)) static void fake_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        g_crc_table[i] = c;
    }
    const char *api = getenv("NIXL_FAKE_API");
    if (api != NULL) {
        nixl_fake_set_option("api", api);
    }
    const char *completion = getenv("NIXL_FAKE_COMPLETION");
    if (completion != NULL) {
        nixl_fake_set_option("completion", completion);
    }
    const char *vram = getenv("NIXL_FAKE_VRAM_AS_HOST");
    if (vram != NULL) {
        nixl_fake_set_option("vram_as_host", vram);
    }
    const char *merge = getenv("NIXL_FAKE_MERGE");
    if (merge != NULL) {
        nixl_fake_set_option("merge", merge);
    }
    const char *faults = getenv("NIXL_FAKE_FAULTS");
    if (faults != NULL) {
        char *copy = strdup(faults);
        char *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
            char function[64];
            int nth;
            int status;
            if (sscanf(item, "%63[^:]:%d:%d", function, &nth, &status) == 3) {
                nixl_fake_set_fault(function, nth, status);
            }
        }
        free(copy);
    }
}

static uint32_t crc32_of(const uint8_t *data, size_t length)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < length; i++) {
        c = g_crc_table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
    }
    return c ^ 0xFFFFFFFFu;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* ------------------------------------------------------------------ growable arrays */

static int grow(void **items, size_t *capacity, size_t needed, size_t item_size)
{
    if (needed <= *capacity) {
        return 0;
    }
    size_t next = *capacity < 8 ? 8 : *capacity * 2;
    while (next < needed) {
        next *= 2;
    }
    void *bigger = realloc(*items, next * item_size);
    if (bigger == NULL) {
        return -1;
    }
    *items = bigger;
    *capacity = next;
    return 0;
}

#define GROW(items, capacity, needed) grow((void **) &(items), &(capacity), (needed), sizeof(*(items)))

/* ------------------------------------------------------------------ object layouts */

struct desc
{
    uint64_t addr;
    uint64_t len;
    uint64_t dev;
    void *meta; /* reg lists: metadata blob; remote lists: owning agent name */
    size_t meta_len;
};

struct dlist
{
    uint32_t magic;
    int mem;
    struct desc *d;
    size_t n;
    size_t cap;
};

struct nixl_capi_xfer_dlist_s
{
    struct dlist l;
};

struct nixl_capi_reg_dlist_s
{
    struct dlist l;
};

struct nixl_capi_remote_dlist_s
{
    struct dlist l;
};

struct kv
{
    char *key;
    char *value;
};

struct nixl_capi_params_s
{
    uint32_t magic;
    struct kv *e;
    size_t n;
    size_t cap;
};

struct nixl_capi_param_iter_s
{
    uint32_t magic;
    struct nixl_capi_params_s *params;
    size_t next;
};

struct nixl_capi_mem_list_s
{
    uint32_t magic;
    int m[6];
    size_t n;
};

struct nixl_capi_string_list_s
{
    uint32_t magic;
    char **s;
    size_t n;
};

struct nixl_capi_backend_s
{
    uint32_t magic;
    struct nixl_capi_agent_s *agent;
};

struct nixl_capi_opt_args_s
{
    uint32_t magic;
    size_t hints;
    int hint_not_ucx;
    uint8_t *msg;
    size_t msg_len;
    bool has_notif;
    bool skip_merge;
    char *ip;
    uint16_t port;
};

struct msg
{
    void *data;
    size_t len;
};

struct sender
{
    char *name;
    struct msg *m;
    size_t n;
    size_t cap;
};

struct nixl_capi_notif_map_s
{
    uint32_t magic;
    struct sender *s;
    size_t n;
    size_t cap;
};

struct nixl_capi_query_resp_list_s
{
    uint32_t magic;
    size_t n;
};

struct region
{
    int mem;
    uint64_t addr;
    uint64_t len;
    uint64_t dev;
};

struct conn;

struct peer
{
    char *name;
    uint64_t pid;
    uint64_t id;
    struct region *r;
    size_t nr;
    size_t cap;
    int valid;       /* 0 after invalidate_remote_md: a later load makes a new generation */
    int dropped;     /* the peer disconnected: NIXL drops its metadata */
    int in_process;
    size_t prepared; /* live prepared handles naming this peer */
    struct conn *conn;
    struct peer *next;
};

struct conn
{
    int fd;
    pthread_mutex_t write_lock;
    pthread_t reader;
    int reader_started;
    int dead;
    struct nixl_capi_agent_s *agent;
    struct peer *peer;
};

struct inconn
{
    int fd;
    pthread_t thread;
    struct nixl_capi_agent_s *agent;
    struct inconn *next;
};

struct notif
{
    char *sender;
    void *data;
    size_t len;
    struct notif *next;
};

struct nixl_capi_xfer_dlist_handle_s
{
    uint32_t magic;
    struct nixl_capi_agent_s *agent;
    int remote;
    struct peer *peer;
    int mem;
    struct desc *d;
    size_t n;
    size_t *run_end;   /* per descriptor: one past the end of its run (NIXL 1.4.0's stride runs) */
    uint64_t *stride;  /* per descriptor: its run's stride */
};

struct triple
{
    uint64_t local;
    uint64_t remote;
    uint64_t len;
};

enum
{
    REQ_NOT_POSTED,
    REQ_IN_PROG,
    REQ_DONE,
    REQ_ERROR
};

struct nixl_capi_xfer_req_s
{
    uint32_t magic;
    struct nixl_capi_agent_s *agent;
    uint64_t id;
    int op;
    struct peer *peer;
    int local_mem;
    uint64_t local_dev;
    int remote_mem;
    uint64_t remote_dev;
    struct triple *t;
    size_t n;
    uint64_t bytes;
    int has_notif;
    uint8_t *notif;
    size_t notif_len;
    int state;
    int error;
    int data_done;
    int notif_sent;
    size_t replies_pending;
    int polls_left;
    atomic_int cancel;
    int busy;
    int queued;
    int released;
    uint64_t posted_us;
    uint64_t post_return_us;
    uint64_t done_us;
    struct nixl_capi_xfer_req_s *next_live;
    struct nixl_capi_xfer_req_s *prev_live;
    struct nixl_capi_xfer_req_s *next_work;
};

struct nixl_capi_agent_s
{
    uint32_t magic;
    char *name;
    nixl_capi_agent_config_t cfg;
    uint64_t id;
    atomic_int in_call;
    pthread_mutex_t api_lock;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int has_ucx;
    struct region *regs;
    size_t nregs;
    size_t regs_cap;
    struct peer *peers;
    struct notif *queue_head;
    struct notif *queue_tail;
    struct nixl_capi_xfer_req_s *live;
    uint64_t next_request_id;
    atomic_int stop;
    pthread_t worker;
    int worker_started;
    struct nixl_capi_xfer_req_s *work_head;
    struct nixl_capi_xfer_req_s *work_tail;
    int listen_fd;
    pthread_t acceptor;
    int acceptor_started;
    char endpoint[96];
    struct inconn *inconns;
    struct nixl_capi_agent_s *next_agent;
};

typedef struct nixl_capi_agent_s agent_t;
typedef struct nixl_capi_xfer_req_s req_t;

/* ------------------------------------------------------------------ registry and agent lock */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* order: g_lock before any agent mu */
static agent_t *g_agents;
static atomic_ulong g_id_counter;

static agent_t *find_agent_locked(uint64_t id)
{
    for (agent_t *a = g_agents; a != NULL; a = a->next_agent) {
        if (a->id == id) {
            return a;
        }
    }
    return NULL;
}

static void enter(agent_t *a)
{
    if (a->cfg.thread_sync == NIXL_CAPI_THREAD_SYNC_NONE) {
        if (atomic_fetch_add(&a->in_call, 1) != 0) {
            fprintf(stderr, "nixl-fake: concurrent calls on agent %s in SYNC_NONE mode\n", a->name);
            abort();
        }
    }
    else {
        pthread_mutex_lock(&a->api_lock);
    }
}

static void leave(agent_t *a)
{
    if (a->cfg.thread_sync == NIXL_CAPI_THREAD_SYNC_NONE) {
        atomic_fetch_sub(&a->in_call, 1);
    }
    else {
        pthread_mutex_unlock(&a->api_lock);
    }
}

#define CHECK_AGENT(a) CHECK_HANDLE(a, M_AGENT)

/* 1 + the index of the registered region holding the range, or 0 when none does */
static int covered(const struct region *regions, size_t count, int mem, uint64_t addr, uint64_t len, uint64_t dev)
{
    for (size_t i = 0; i < count; i++) {
        const struct region *r = &regions[i];
        if (r->mem == mem && r->dev == dev && addr >= r->addr && len <= r->len && addr - r->addr <= r->len - len) {
            return (int) i + 1;
        }
    }
    return 0;
}

/*
 * NIXL 1.4.0 compresses a prepared list into runs: consecutive descriptors of one length and device,
 * in one registration, at increasing addresses a constant stride apart (a run's second descriptor
 * sets the stride). Each descriptor gets its run's end (exclusive) and stride.
 */
static void compute_runs(nixl_capi_xfer_dlist_handle_t h, const int *regions)
{
    size_t start = 0;
    uint64_t stride = h->d[0].len;
    for (size_t i = 1; i <= h->n; i++) {
        int extends = 0;
        if (i < h->n && h->d[i].len == h->d[start].len && h->d[i].dev == h->d[start].dev && regions[i] == regions[start]) {
            if (i - start == 1) {
                extends = h->d[i].addr > h->d[i - 1].addr;
                if (extends) {
                    stride = h->d[i].addr - h->d[i - 1].addr;
                }
            }
            else {
                extends = h->d[i].addr - h->d[i - 1].addr == stride;
            }
        }
        if (!extends) {
            for (size_t d = start; d < i; d++) {
                h->run_end[d] = i;
                h->stride[d] = stride;
            }
            if (i < h->n) {
                start = i;
                stride = h->d[i].len;
            }
        }
    }
}

static struct peer *find_peer(agent_t *a, const char *name)
{
    for (struct peer *p = a->peers; p != NULL; p = p->next) {
        if (p->valid && strcmp(p->name, name) == 0) {
            return p;
        }
    }
    return NULL;
}

static void append_notif(agent_t *target, const char *sender, const void *data, size_t len)
{
    struct notif *n = calloc(1, sizeof(*n));
    n->sender = strdup(sender);
    n->data = malloc(len > 0 ? len : 1);
    memcpy(n->data, data, len);
    n->len = len;
    if (target->queue_tail != NULL) {
        target->queue_tail->next = n;
    }
    else {
        target->queue_head = n;
    }
    target->queue_tail = n;
    atomic_fetch_add(&s_notifications, 1);
}

/* ------------------------------------------------------------------ socket frames */

enum
{
    F_HELLO = 1,
    F_WRITE,
    F_ACK,
    F_READ,
    F_DATA,
    F_NOTIF
};

struct frame
{
    uint32_t type;
    int32_t status;
    uint64_t req_id;
    uint64_t seq;
    uint64_t addr;
    uint64_t len;
    uint64_t dev;
    uint32_t mem;
    uint32_t reserved;
};

static int write_all(int fd, const void *data, size_t length)
{
    const uint8_t *p = data;
    while (length > 0) {
        ssize_t n = send(fd, p, length, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        length -= (size_t) n;
    }
    return 0;
}

static int read_all(int fd, void *data, size_t length)
{
    uint8_t *p = data;
    while (length > 0) {
        ssize_t n = recv(fd, p, length, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        length -= (size_t) n;
    }
    return 0;
}

static int send_frame(struct conn *c, const struct frame *f, const void *payload, size_t payload_len)
{
    pthread_mutex_lock(&c->write_lock);
    int rc = c->dead ? -1 : write_all(c->fd, f, sizeof(*f));
    if (rc == 0 && payload_len > 0) {
        rc = write_all(c->fd, payload, payload_len);
    }
    if (rc != 0) {
        /* a stream that refuses a write is gone, as UCX finds an endpoint failed before the reader sees the end */
        c->dead = 1;
    }
    pthread_mutex_unlock(&c->write_lock);
    if (rc == 0) {
        atomic_fetch_add(&s_frames, 1);
    }
    return rc;
}

static void make_address(const char *endpoint, struct sockaddr_un *address, socklen_t *length)
{
    /* "unix:@name": Linux abstract namespace, nothing to clean up on disk */
    memset(address, 0, sizeof(*address));
    address->sun_family = AF_UNIX;
    const char *name = endpoint + strlen("unix:@");
    size_t n = strlen(name);
    if (n > sizeof(address->sun_path) - 2) {
        n = sizeof(address->sun_path) - 2;
    }
    memcpy(address->sun_path + 1, name, n);
    *length = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void wait_until_stopped(agent_t *a)
{
    while (!atomic_load(&a->stop)) {
        usleep(10000);
    }
}

/* Target side: one thread per accepted connection handles its frames strictly in order. */
static void *serve_connection(void *argument)
{
    struct inconn *in = argument;
    agent_t *a = in->agent;
    struct frame f;
    char *sender = NULL;
    if (read_all(in->fd, &f, sizeof(f)) != 0 || f.type != F_HELLO || f.len == 0 || f.len > 4096) {
        return NULL;
    }
    sender = calloc(1, f.len + 1);
    if (read_all(in->fd, sender, f.len) != 0) {
        free(sender);
        return NULL;
    }
    for (;;) {
        if (read_all(in->fd, &f, sizeof(f)) != 0) {
            break;
        }
        if (f.type == F_WRITE || f.type == F_READ) {
            int stall_status;
            if (fault_hit("service_stall", &stall_status)) {
                wait_until_stopped(a);
                break;
            }
        }
        if (f.type == F_WRITE || f.type == F_NOTIF) {
            if (f.len > (1ull << 32)) {
                break;
            }
            void *payload = malloc(f.len > 0 ? f.len : 1);
            if (payload == NULL || read_all(in->fd, payload, f.len) != 0) {
                free(payload);
                break;
            }
            pthread_mutex_lock(&a->mu);
            int status = ST_OK;
            if (f.type == F_NOTIF) {
                append_notif(a, sender, payload, f.len);
            }
            else if (covered(a->regs, a->nregs, (int) f.mem, f.addr, f.len, f.dev)) {
                memcpy((void *) (uintptr_t) f.addr, payload, f.len);
            }
            else {
                fprintf(stderr, "nixl-fake: %s: WRITE of %llu bytes at 0x%llx from %s lies outside every registration\n",
                        a->name, (unsigned long long) f.len, (unsigned long long) f.addr, sender);
                status = ST_BACKEND;
            }
            pthread_mutex_unlock(&a->mu);
            free(payload);
            if (f.type == F_WRITE) {
                struct frame ack = { .type = F_ACK, .status = status, .req_id = f.req_id, .seq = f.seq };
                if (write_all(in->fd, &ack, sizeof(ack)) != 0) {
                    break;
                }
            }
        }
        else if (f.type == F_READ) {
            void *payload = NULL;
            struct frame data = { .type = F_DATA, .req_id = f.req_id, .seq = f.seq };
            pthread_mutex_lock(&a->mu);
            if (f.len <= (1ull << 32) && covered(a->regs, a->nregs, (int) f.mem, f.addr, f.len, f.dev)) {
                payload = malloc(f.len > 0 ? f.len : 1);
                memcpy(payload, (const void *) (uintptr_t) f.addr, f.len);
                data.len = f.len;
            }
            else {
                data.status = ST_BACKEND;
            }
            pthread_mutex_unlock(&a->mu);
            int rc = write_all(in->fd, &data, sizeof(data));
            if (rc == 0 && data.len > 0) {
                rc = write_all(in->fd, payload, data.len);
            }
            free(payload);
            if (rc != 0) {
                break;
            }
        }
        else {
            break;
        }
    }
    free(sender);
    return NULL;
}

static void *accept_loop(void *argument)
{
    agent_t *a = argument;
    for (;;) {
        int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR && !atomic_load(&a->stop)) {
                continue;
            }
            return NULL;
        }
        if (atomic_load(&a->stop)) {
            close(fd);
            return NULL;
        }
        struct inconn *in = calloc(1, sizeof(*in));
        in->fd = fd;
        in->agent = a;
        pthread_mutex_lock(&a->mu);
        in->next = a->inconns;
        a->inconns = in;
        pthread_mutex_unlock(&a->mu);
        pthread_create(&in->thread, NULL, serve_connection, in);
    }
}

static req_t *find_live_request(agent_t *a, uint64_t id)
{
    for (req_t *r = a->live; r != NULL; r = r->next_live) {
        if (r->id == id) {
            return r;
        }
    }
    return NULL;
}

/* Initiator side: reads ACK and DATA replies; a closed connection fails what is pending. */
static void *read_replies(void *argument)
{
    struct conn *c = argument;
    agent_t *a = c->agent;
    struct frame f;
    for (;;) {
        if (read_all(c->fd, &f, sizeof(f)) != 0) {
            break;
        }
        void *payload = NULL;
        if (f.type == F_DATA && f.len > 0) {
            if (f.len > (1ull << 32) || (payload = malloc(f.len)) == NULL || read_all(c->fd, payload, f.len) != 0) {
                free(payload);
                break;
            }
        }
        else if (f.type != F_ACK && f.type != F_DATA) {
            break;
        }
        pthread_mutex_lock(&a->mu);
        req_t *r = find_live_request(a, f.req_id);
        if (r != NULL && r->state == REQ_IN_PROG && r->peer == c->peer && f.seq < r->n) {
            if (f.status != ST_OK) {
                r->state = REQ_ERROR;
                r->error = ST_BACKEND;
            }
            else {
                if (f.type == F_DATA) {
                    if (f.len == r->t[f.seq].len) {
                        memcpy((void *) (uintptr_t) r->t[f.seq].local, payload, f.len);
                    }
                    else {
                        r->state = REQ_ERROR;
                        r->error = ST_BACKEND;
                    }
                }
                if (r->state == REQ_IN_PROG && --r->replies_pending == 0) {
                    r->data_done = 1;
                    r->done_us = now_us();
                }
            }
        }
        pthread_mutex_unlock(&a->mu);
        free(payload);
    }
    pthread_mutex_lock(&a->mu);
    c->dead = 1;
    /* NIXL keeps the metadata of a peer that died until a post or status call sees the disconnect, and drops it then;
     * the requests still running on it fail either way, also when a failed write let a status call drop the peer first */
    if (c->peer->valid) {
        for (req_t *r = a->live; r != NULL; r = r->next_live) {
            if (r->peer == c->peer && r->state == REQ_IN_PROG) {
                r->state = REQ_ERROR;
                r->error = ST_BACKEND;
            }
        }
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* ------------------------------------------------------------------ data path */

/* Copies a request between two agents of this process. Called without the initiator's lock. */
static int copy_in_process(agent_t *a, req_t *r)
{
    int status = ST_OK;
    int dropped_status;
    pthread_mutex_lock(&g_lock);
    agent_t *target = find_agent_locked(r->peer->id);
    if (target == NULL || fault_hit("drop_peer", &dropped_status)) {
        pthread_mutex_unlock(&g_lock);
        pthread_mutex_lock(&a->mu);
        r->peer->dropped = 1;
        pthread_mutex_unlock(&a->mu);
        return ST_BACKEND;
    }
    pthread_mutex_lock(&target->mu);
    for (size_t i = 0; i < r->n && !atomic_load(&r->cancel); i++) {
        const struct triple *t = &r->t[i];
        /* the peer may have deregistered since the prep: check its registrations as they are now */
        if (!covered(target->regs, target->nregs, r->remote_mem, t->remote, t->len, r->remote_dev)) {
            fprintf(stderr, "nixl-fake: %s: %llu bytes at 0x%llx are no longer registered with %s\n",
                    a->name, (unsigned long long) t->len, (unsigned long long) t->remote, target->name);
            status = ST_BACKEND;
            break;
        }
        if (r->op == NIXL_CAPI_XFER_OP_WRITE) {
            memcpy((void *) (uintptr_t) t->remote, (const void *) (uintptr_t) t->local, t->len);
        }
        else {
            memcpy((void *) (uintptr_t) t->local, (const void *) (uintptr_t) t->remote, t->len);
        }
    }
    pthread_mutex_unlock(&target->mu);
    pthread_mutex_unlock(&g_lock);
    return status;
}

/* Writes a request's frames to the peer's connection; replies arrive on the reader thread. */
static int send_frames(req_t *r)
{
    struct conn *c = r->peer->conn;
    for (size_t i = 0; i < r->n && !atomic_load(&r->cancel); i++) {
        const struct triple *t = &r->t[i];
        struct frame f = {
            .type = r->op == NIXL_CAPI_XFER_OP_WRITE ? F_WRITE : F_READ,
            .req_id = r->id,
            .seq = i,
            .addr = t->remote,
            .len = t->len,
            .dev = r->remote_dev,
            .mem = (uint32_t) r->remote_mem,
        };
        int rc = f.type == F_WRITE ? send_frame(c, &f, (const void *) (uintptr_t) t->local, t->len) : send_frame(c, &f, NULL, 0);
        if (rc != 0) {
            return ST_BACKEND;
        }
    }
    return ST_OK;
}

static void *work_loop(void *argument)
{
    agent_t *a = argument;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!atomic_load(&a->stop) && a->work_head == NULL) {
            pthread_cond_wait(&a->cond, &a->mu);
        }
        if (atomic_load(&a->stop)) {
            break;
        }
        req_t *r = a->work_head;
        a->work_head = r->next_work;
        if (a->work_head == NULL) {
            a->work_tail = NULL;
        }
        r->queued = 0;
        r->busy = 1;
        pthread_mutex_unlock(&a->mu);
        int status = r->peer->in_process ? copy_in_process(a, r) : send_frames(r);
        pthread_mutex_lock(&a->mu);
        r->busy = 0;
        if (r->state == REQ_IN_PROG) {
            if (status != ST_OK) {
                r->state = REQ_ERROR;
                r->error = status;
            }
            else if (r->peer->in_process && !atomic_load(&r->cancel)) {
                r->data_done = 1;
                r->done_us = now_us();
            }
        }
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static int deliver_notif(agent_t *a, struct peer *p, const void *data, size_t len)
{
    if (p->in_process) {
        pthread_mutex_lock(&g_lock);
        agent_t *target = find_agent_locked(p->id);
        if (target == NULL) {
            pthread_mutex_unlock(&g_lock);
            return ST_BACKEND;
        }
        pthread_mutex_lock(&target->mu);
        append_notif(target, a->name, data, len);
        pthread_mutex_unlock(&target->mu);
        pthread_mutex_unlock(&g_lock);
        return ST_OK;
    }
    struct frame f = { .type = F_NOTIF, .len = len };
    return send_frame(p->conn, &f, data, len) == 0 ? ST_OK : ST_BACKEND;
}

/* Called with a->mu held once the data is in place: sends the notification, as UCX does. */
static int finish_locked(agent_t *a, req_t *r)
{
    if (r->has_notif && !r->notif_sent) {
        struct peer *p = r->peer;
        pthread_mutex_unlock(&a->mu);
        int status = deliver_notif(a, p, r->notif, r->notif_len);
        pthread_mutex_lock(&a->mu);
        if (status != ST_OK) {
            r->state = REQ_ERROR;
            r->error = ST_BACKEND;
            return ST_BACKEND;
        }
        r->notif_sent = 1;
    }
    r->state = REQ_DONE;
    if (r->done_us == 0) {
        r->done_us = now_us();
    }
    return ST_OK;
}

/* ------------------------------------------------------------------ A. agent lifecycle */

static int start_service(agent_t *a)
{
    snprintf(a->endpoint, sizeof(a->endpoint), "unix:@nixl-fake-%d-%016llx", (int) getpid(), (unsigned long long) a->id);
    struct sockaddr_un address;
    socklen_t length;
    make_address(a->endpoint, &address, &length);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    if (bind(fd, (struct sockaddr *) &address, length) != 0 || listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    a->listen_fd = fd;
    if (pthread_create(&a->acceptor, NULL, accept_loop, a) != 0) {
        close(fd);
        a->listen_fd = -1;
        return -1;
    }
    a->acceptor_started = 1;
    return 0;
}

API nixl_capi_status_t nixl_capi_create_configured_agent(const char *name, const nixl_capi_agent_config_t *cfg, nixl_capi_agent_t *agent)
{
    CHECK_NULL(name);
    CHECK_NULL(cfg);
    CHECK_NULL(agent);
    FAULT("create_configured_agent");
    if (name[0] == '\0') {
        return ret(ST_BACKEND);
    }
    agent_t *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return ret(ST_BACKEND);
    }
    a->magic = M_AGENT;
    a->name = strdup(name);
    a->cfg = *cfg;
    if (a->cfg.thread_sync == NIXL_CAPI_THREAD_SYNC_NONE && a->cfg.enable_listen_thread) {
        a->cfg.thread_sync = NIXL_CAPI_THREAD_SYNC_STRICT;
    }
    a->id = ((uint64_t) getpid() << 40) ^ (now_us() << 8) ^ (atomic_fetch_add(&g_id_counter, 1) * 0x9E3779B97F4A7C15ull);
    a->listen_fd = -1;
    pthread_mutex_init(&a->api_lock, NULL);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cond, NULL);
    pthread_mutex_lock(&g_lock);
    a->next_agent = g_agents;
    g_agents = a;
    pthread_mutex_unlock(&g_lock);
    atomic_fetch_add(&s_live_agents, 1);
    *agent = a;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_create_agent(const char *name, nixl_capi_agent_t *agent)
{
    nixl_capi_agent_config_t cfg = {
        .enable_prog_thread = true,
        .listen_port = 8888,
        .thread_sync = NIXL_CAPI_THREAD_SYNC_NONE,
        .num_workers = 1,
        .lthr_delay_us = 100000,
    };
    return nixl_capi_create_configured_agent(name, &cfg, agent);
}

static void free_request_contents(req_t *r)
{
    free(r->t);
    free(r->notif);
    r->t = NULL;
    r->notif = NULL;
    r->n = 0;
}

API nixl_capi_status_t nixl_capi_destroy_agent(nixl_capi_agent_t a)
{
    CHECK_AGENT(a);
    int stall_ms;
    if (fault_hit("destroy_agent_stall", &stall_ms) && stall_ms > 0) {
        struct timespec stall = {.tv_sec = stall_ms / 1000, .tv_nsec = (long) (stall_ms % 1000) * 1000000L};
        while (nanosleep(&stall, &stall) != 0 && errno == EINTR) {
        }
    }
    enter(a);
    pthread_mutex_lock(&g_lock);
    for (agent_t **p = &g_agents; *p != NULL; p = &(*p)->next_agent) {
        if (*p == a) {
            *p = a->next_agent;
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);

    pthread_mutex_lock(&a->mu);
    atomic_store(&a->stop, 1);
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    /* shut every socket down first so no thread stays blocked, then join them all */
    if (a->listen_fd >= 0) {
        shutdown(a->listen_fd, SHUT_RDWR);
    }
    for (struct peer *p = a->peers; p != NULL; p = p->next) {
        if (p->conn != NULL && p->conn->fd >= 0) {
            shutdown(p->conn->fd, SHUT_RDWR);
        }
    }
    if (a->worker_started) {
        pthread_join(a->worker, NULL);
    }
    if (a->acceptor_started) {
        pthread_join(a->acceptor, NULL);
    }
    if (a->listen_fd >= 0) {
        close(a->listen_fd);
    }
    pthread_mutex_lock(&a->mu);
    for (struct inconn *in = a->inconns; in != NULL; in = in->next) {
        shutdown(in->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&a->mu);
    for (struct inconn *in = a->inconns, *next; in != NULL; in = next) {
        next = in->next;
        pthread_join(in->thread, NULL);
        close(in->fd);
        free(in);
    }
    for (struct peer *p = a->peers, *next; p != NULL; p = next) {
        next = p->next;
        if (p->conn != NULL) {
            if (p->conn->reader_started) {
                pthread_join(p->conn->reader, NULL);
            }
            if (p->conn->fd >= 0) {
                close(p->conn->fd);
            }
            pthread_mutex_destroy(&p->conn->write_lock);
            free(p->conn);
        }
        if (p->valid && p->prepared > 0) {
            misuse(__func__, "prepared handles still live when their agent was destroyed");
        }
        free(p->r);
        free(p->name);
        free(p);
    }
    for (req_t *r = a->live; r != NULL; r = r->next_live) {
        /* the wrapper stays valid for destroy_xfer_req; its contents die with the agent */
        misuse(__func__, "a transfer request was still live when its agent was destroyed");
        free_request_contents(r);
        r->released = 1;
        r->agent = NULL;
    }
    for (struct notif *n = a->queue_head, *next; n != NULL; n = next) {
        next = n->next;
        free(n->sender);
        free(n->data);
        free(n);
    }
    free(a->regs);
    free(a->name);
    leave(a);
    pthread_mutex_destroy(&a->api_lock);
    atomic_fetch_sub(&s_live_agents, 1);
    retire(a);
    return ret(ST_OK);
}

/* ------------------------------------------------------------------ B. plugins and backends */

static nixl_capi_params_t new_params(void)
{
    return alloc_object(sizeof(struct nixl_capi_params_s), M_PARAMS);
}

static int params_put(nixl_capi_params_t p, const char *key, const char *value)
{
    for (size_t i = 0; i < p->n; i++) {
        if (strcmp(p->e[i].key, key) == 0) {
            free(p->e[i].value);
            p->e[i].value = strdup(value);
            return 0;
        }
    }
    if (GROW(p->e, p->cap, p->n + 1) != 0) {
        return -1;
    }
    p->e[p->n].key = strdup(key);
    p->e[p->n].value = strdup(value);
    p->n++;
    return 0;
}

static void ucx_defaults(nixl_capi_mem_list_t *mems, nixl_capi_params_t *params)
{
    nixl_capi_mem_list_t m = alloc_object(sizeof(struct nixl_capi_mem_list_s), M_MEMLIST);
    m->m[0] = NIXL_CAPI_MEM_DRAM;
    m->m[1] = NIXL_CAPI_MEM_VRAM;
    m->n = 2;
    nixl_capi_params_t p = new_params();
    params_put(p, "ucx_devices", "");
    params_put(p, "num_workers", "1");
    params_put(p, "ucx_error_handling_mode", "peer");
    *mems = m;
    *params = p;
}

API nixl_capi_status_t nixl_capi_get_available_plugins(nixl_capi_agent_t a, nixl_capi_string_list_t *plugins)
{
    CHECK_AGENT(a);
    CHECK_NULL(plugins);
    FAULT("get_available_plugins");
    nixl_capi_string_list_t list = alloc_object(sizeof(struct nixl_capi_string_list_s), M_STRLIST);
    list->s = calloc(1, sizeof(char *));
    list->s[0] = strdup("UCX");
    list->n = 1;
    *plugins = list;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_get_plugin_params(nixl_capi_agent_t a, const char *plugin_name, nixl_capi_mem_list_t *mems, nixl_capi_params_t *params)
{
    CHECK_AGENT(a);
    CHECK_NULL(plugin_name);
    CHECK_NULL(mems);
    CHECK_NULL(params);
    FAULT("get_plugin_params");
    if (strcmp(plugin_name, "UCX") != 0) {
        return ret(ST_BACKEND);
    }
    ucx_defaults(mems, params);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_create_backend(nixl_capi_agent_t a, const char *plugin_name, nixl_capi_params_t params, nixl_capi_backend_t *backend)
{
    CHECK_AGENT(a);
    CHECK_NULL(plugin_name);
    CHECK_HANDLE(params, M_PARAMS);
    CHECK_NULL(backend);
    FAULT("create_backend");
    enter(a);
    int status = ST_OK;
    if (strcmp(plugin_name, "UCX") != 0 || a->has_ucx) {
        status = ST_BACKEND;
    }
    else if (start_service(a) != 0) {
        fprintf(stderr, "nixl-fake: %s: cannot listen on %s: %s\n", a->name, a->endpoint, strerror(errno));
        status = ST_BACKEND;
    }
    else {
        a->has_ucx = 1;
        nixl_capi_backend_t b = alloc_object(sizeof(struct nixl_capi_backend_s), M_BACKEND);
        b->agent = a;
        *backend = b;
    }
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_destroy_backend(nixl_capi_backend_t backend)
{
    CHECK_HANDLE(backend, M_BACKEND);
    retire_object(backend);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_get_backend_params(nixl_capi_agent_t a, nixl_capi_backend_t backend, nixl_capi_mem_list_t *mems, nixl_capi_params_t *params)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(backend, M_BACKEND);
    CHECK_NULL(mems);
    CHECK_NULL(params);
    ucx_defaults(mems, params);
    return ret(ST_OK);
}

/* ------------------------------------------------------------------ C. string list */

API nixl_capi_status_t nixl_capi_destroy_string_list(nixl_capi_string_list_t list)
{
    CHECK_HANDLE(list, M_STRLIST);
    for (size_t i = 0; i < list->n; i++) {
        free(list->s[i]);
    }
    free(list->s);
    retire_object(list);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_string_list_size(nixl_capi_string_list_t list, size_t *size)
{
    CHECK_HANDLE(list, M_STRLIST);
    CHECK_NULL(size);
    *size = list->n;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_string_list_get(nixl_capi_string_list_t list, size_t index, const char **str)
{
    CHECK_HANDLE(list, M_STRLIST);
    CHECK_NULL(str);
    if (index >= list->n) {
        return ret(ST_INVAL);
    }
    *str = list->s[index];
    return ret(ST_OK);
}

/* ------------------------------------------------------------------ D. params */

API nixl_capi_status_t nixl_capi_create_params(nixl_capi_params_t *params)
{
    CHECK_NULL(params);
    *params = new_params();
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_params_add(nixl_capi_params_t params, const char *key, const char *value)
{
    CHECK_HANDLE(params, M_PARAMS);
    CHECK_NULL(key);
    CHECK_NULL(value);
    return ret(params_put(params, key, value) == 0 ? ST_OK : ST_BACKEND);
}

API nixl_capi_status_t nixl_capi_params_is_empty(nixl_capi_params_t params, bool *is_empty)
{
    CHECK_HANDLE(params, M_PARAMS);
    CHECK_NULL(is_empty);
    *is_empty = params->n == 0;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_params_create_iterator(nixl_capi_params_t params, nixl_capi_param_iter_t *iter)
{
    CHECK_HANDLE(params, M_PARAMS);
    CHECK_NULL(iter);
    nixl_capi_param_iter_t it = alloc_object(sizeof(struct nixl_capi_param_iter_s), M_ITER);
    it->params = params;
    *iter = it;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_params_iterator_next(nixl_capi_param_iter_t iter, const char **key, const char **value, bool *has_next)
{
    CHECK_HANDLE(iter, M_ITER);
    CHECK_NULL(key);
    CHECK_NULL(value);
    CHECK_NULL(has_next);
    if (iter->params->magic != M_PARAMS) {
        return ret(misuse(__func__, "iterator outlived its params"));
    }
    /* NIXL's contract: at the end nothing is written; the last element also reports has_next=false */
    if (iter->next >= iter->params->n) {
        *has_next = false;
        return ret(ST_OK);
    }
    *key = iter->params->e[iter->next].key;
    *value = iter->params->e[iter->next].value;
    iter->next++;
    *has_next = iter->next < iter->params->n;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_params_destroy_iterator(nixl_capi_param_iter_t iter)
{
    CHECK_HANDLE(iter, M_ITER);
    retire_object(iter);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_destroy_params(nixl_capi_params_t params)
{
    CHECK_HANDLE(params, M_PARAMS);
    for (size_t i = 0; i < params->n; i++) {
        free(params->e[i].key);
        free(params->e[i].value);
    }
    free(params->e);
    retire_object(params);
    return ret(ST_OK);
}

/* ------------------------------------------------------------------ E. memory-type list */

API nixl_capi_status_t nixl_capi_mem_list_is_empty(nixl_capi_mem_list_t list, bool *is_empty)
{
    CHECK_HANDLE(list, M_MEMLIST);
    CHECK_NULL(is_empty);
    *is_empty = list->n == 0;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_mem_list_size(nixl_capi_mem_list_t list, size_t *size)
{
    CHECK_HANDLE(list, M_MEMLIST);
    CHECK_NULL(size);
    *size = list->n;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_mem_list_get(nixl_capi_mem_list_t list, size_t index, nixl_capi_mem_type_t *mem_type)
{
    CHECK_HANDLE(list, M_MEMLIST);
    CHECK_NULL(mem_type);
    if (index >= list->n) {
        return ret(ST_INVAL);
    }
    *mem_type = (nixl_capi_mem_type_t) list->m[index];
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_mem_type_to_string(nixl_capi_mem_type_t mem_type, const char **str)
{
    static const char *const names[] = { "DRAM", "VRAM", "BLOCK", "OBJECT", "FILE", "UNKNOWN" };
    CHECK_NULL(str);
    if ((unsigned) mem_type > 5) {
        return ret(ST_INVAL);
    }
    *str = names[mem_type];
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_destroy_mem_list(nixl_capi_mem_list_t list)
{
    CHECK_HANDLE(list, M_MEMLIST);
    retire_object(list);
    return ret(ST_OK);
}

/* ------------------------------------------------------------------ F. optional arguments */

API nixl_capi_status_t nixl_capi_create_opt_args(nixl_capi_opt_args_t *args)
{
    CHECK_NULL(args);
    nixl_capi_opt_args_t o = alloc_object(sizeof(struct nixl_capi_opt_args_s), M_OPT);
    o->ip = strdup("");
    o->port = 8888;
    *args = o;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_destroy_opt_args(nixl_capi_opt_args_t args)
{
    CHECK_HANDLE(args, M_OPT);
    free(args->msg);
    free(args->ip);
    retire_object(args);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_add_backend(nixl_capi_opt_args_t args, nixl_capi_backend_t backend)
{
    CHECK_HANDLE(args, M_OPT);
    CHECK_HANDLE(backend, M_BACKEND);
    args->hints++;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_set_notif_msg(nixl_capi_opt_args_t args, const void *data, size_t len)
{
    CHECK_HANDLE(args, M_OPT);
    if (data == NULL && len > 0) {
        return ret(ST_INVAL);
    }
    free(args->msg);
    args->msg = NULL;
    args->msg_len = 0;
    if (len > 0) {
        args->msg = malloc(len);
        memcpy(args->msg, data, len);
        args->msg_len = len;
    }
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_get_notif_msg(nixl_capi_opt_args_t args, void **data, size_t *len)
{
    CHECK_HANDLE(args, M_OPT);
    CHECK_NULL(data);
    CHECK_NULL(len);
    if (args->msg_len == 0) {
        *data = NULL;
        *len = 0;
        return ret(ST_OK);
    }
    *data = malloc(args->msg_len);
    memcpy(*data, args->msg, args->msg_len);
    *len = args->msg_len;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_set_has_notif(nixl_capi_opt_args_t args, bool has_notif)
{
    CHECK_HANDLE(args, M_OPT);
    args->has_notif = has_notif;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_get_has_notif(nixl_capi_opt_args_t args, bool *has_notif)
{
    CHECK_HANDLE(args, M_OPT);
    CHECK_NULL(has_notif);
    *has_notif = args->has_notif;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_set_skip_desc_merge(nixl_capi_opt_args_t args, bool skip_merge)
{
    CHECK_HANDLE(args, M_OPT);
    args->skip_merge = skip_merge;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_get_skip_desc_merge(nixl_capi_opt_args_t args, bool *skip_merge)
{
    CHECK_HANDLE(args, M_OPT);
    CHECK_NULL(skip_merge);
    *skip_merge = args->skip_merge;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_set_ip_addr(nixl_capi_opt_args_t args, const char *ip_addr)
{
    CHECK_HANDLE(args, M_OPT);
    CHECK_NULL(ip_addr);
    free(args->ip);
    args->ip = strdup(ip_addr);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_opt_args_set_port(nixl_capi_opt_args_t args, uint16_t port)
{
    CHECK_HANDLE(args, M_OPT);
    args->port = port;
    return ret(ST_OK);
}

/* ------------------------------------------------------------------ G, H, I. descriptor lists */

static int dl_create(void **out, int mem, uint32_t magic)
{
    CHECK_NULL(out);
    struct dlist *l = alloc_object(sizeof(struct dlist), magic);
    l->mem = mem;
    *out = l;
    return ret(ST_OK);
}

static int dl_destroy(void *handle)
{
    struct dlist *l = handle;
    for (size_t i = 0; i < l->n; i++) {
        free(l->d[i].meta);
    }
    free(l->d);
    retire_object(l);
    return ret(ST_OK);
}

static int dl_add(struct dlist *l, uint64_t addr, uint64_t len, uint64_t dev, const void *meta, size_t meta_len)
{
    if (GROW(l->d, l->cap, l->n + 1) != 0) {
        return ret(ST_BACKEND);
    }
    struct desc *d = &l->d[l->n++];
    memset(d, 0, sizeof(*d));
    d->addr = addr;
    d->len = len;
    d->dev = dev;
    if (meta != NULL && meta_len > 0) {
        d->meta = malloc(meta_len);
        memcpy(d->meta, meta, meta_len);
        d->meta_len = meta_len;
    }
    return ret(ST_OK);
}

static int dl_remove(struct dlist *l, int index)
{
    if (index < 0 || (size_t) index >= l->n) {
        return ret(ST_BACKEND);
    }
    free(l->d[index].meta);
    memmove(&l->d[index], &l->d[index + 1], (l->n - (size_t) index - 1) * sizeof(struct desc));
    l->n--;
    return ret(ST_OK);
}

static int dl_clear(struct dlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->d[i].meta);
    }
    l->n = 0;
    return ret(ST_OK);
}

static int dl_resize(struct dlist *l, size_t size)
{
    if (size < l->n) {
        for (size_t i = size; i < l->n; i++) {
            free(l->d[i].meta);
        }
    }
    else if (GROW(l->d, l->cap, size) != 0) {
        return ret(ST_BACKEND);
    }
    else {
        memset(&l->d[l->n], 0, (size - l->n) * sizeof(struct desc));
    }
    l->n = size;
    return ret(ST_OK);
}

static int dl_print(const struct dlist *l)
{
    printf("nixl-fake dlist mem=%d count=%zu\n", l->mem, l->n);
    for (size_t i = 0; i < l->n; i++) {
        printf("  [%zu] addr=0x%llx len=%llu dev=%llu\n", i, (unsigned long long) l->d[i].addr,
                (unsigned long long) l->d[i].len, (unsigned long long) l->d[i].dev);
    }
    return ret(ST_OK);
}

#define XL(h) (&(h)->l)

/* The functions transfer and registration lists share, defined once for each list type. */
#define DLIST_FUNCTIONS(kind, MAGIC) \
    API nixl_capi_status_t nixl_capi_create_##kind##_dlist(nixl_capi_mem_type_t mem_type, nixl_capi_##kind##_dlist_t *dlist) \
    { \
        return dl_create((void **) dlist, (int) mem_type, MAGIC); \
    } \
    API nixl_capi_status_t nixl_capi_destroy_##kind##_dlist(nixl_capi_##kind##_dlist_t dlist) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        return dl_destroy(dlist); \
    } \
    API nixl_capi_status_t nixl_capi_##kind##_dlist_get_type(nixl_capi_##kind##_dlist_t dlist, nixl_capi_mem_type_t *mem_type) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        CHECK_NULL(mem_type); \
        *mem_type = (nixl_capi_mem_type_t) XL(dlist)->mem; \
        return ret(ST_OK); \
    } \
    API nixl_capi_status_t nixl_capi_##kind##_dlist_desc_count(nixl_capi_##kind##_dlist_t dlist, size_t *count) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        CHECK_NULL(count); \
        *count = XL(dlist)->n; \
        return ret(ST_OK); \
    } \
    API nixl_capi_status_t nixl_capi_##kind##_dlist_is_empty(nixl_capi_##kind##_dlist_t dlist, bool *is_empty) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        CHECK_NULL(is_empty); \
        *is_empty = XL(dlist)->n == 0; \
        return ret(ST_OK); \
    } \
    /* NIXL's trim builds a trimmed copy and discards it: a no-op */ \
    API nixl_capi_status_t nixl_capi_##kind##_dlist_trim(nixl_capi_##kind##_dlist_t dlist) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        return ret(ST_OK); \
    } \
    API nixl_capi_status_t nixl_capi_##kind##_dlist_rem_desc(nixl_capi_##kind##_dlist_t dlist, int index) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        return dl_remove(XL(dlist), index); \
    } \
    API nixl_capi_status_t nixl_capi_##kind##_dlist_clear(nixl_capi_##kind##_dlist_t dlist) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        return dl_clear(XL(dlist)); \
    } \
    API nixl_capi_status_t nixl_capi_##kind##_dlist_resize(nixl_capi_##kind##_dlist_t dlist, size_t new_size) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        return dl_resize(XL(dlist), new_size); \
    } \
    API nixl_capi_status_t nixl_capi_##kind##_dlist_print(nixl_capi_##kind##_dlist_t dlist) \
    { \
        CHECK_HANDLE(dlist, MAGIC); \
        return dl_print(XL(dlist)); \
    }

DLIST_FUNCTIONS(xfer, M_XDLIST)
DLIST_FUNCTIONS(reg, M_RDLIST)

API nixl_capi_status_t nixl_capi_xfer_dlist_add_desc(nixl_capi_xfer_dlist_t dlist, uintptr_t addr, size_t len, uint64_t dev_id)
{
    CHECK_HANDLE(dlist, M_XDLIST);
    return dl_add(XL(dlist), addr, len, dev_id, NULL, 0);
}

/* a deprecated alias of desc_count */
API nixl_capi_status_t nixl_capi_xfer_dlist_len(nixl_capi_xfer_dlist_t dlist, size_t *len)
{
    return nixl_capi_xfer_dlist_desc_count(dlist, len);
}

API nixl_capi_status_t nixl_capi_reg_dlist_add_desc(nixl_capi_reg_dlist_t dlist, uintptr_t addr, size_t len, uint64_t dev_id, const void *metadata, size_t metadata_len)
{
    CHECK_HANDLE(dlist, M_RDLIST);
    return dl_add(XL(dlist), addr, len, dev_id, metadata, metadata_len);
}

#ifndef FAKE_API_1_4
API nixl_capi_status_t nixl_capi_create_remote_dlist(nixl_capi_mem_type_t mem_type, nixl_capi_remote_dlist_t *dlist)
{
    return dl_create((void **) dlist, (int) mem_type, M_REMDLIST);
}

API nixl_capi_status_t nixl_capi_destroy_remote_dlist(nixl_capi_remote_dlist_t dlist)
{
    CHECK_HANDLE(dlist, M_REMDLIST);
    return dl_destroy(dlist);
}

API nixl_capi_status_t nixl_capi_remote_dlist_add_desc(nixl_capi_remote_dlist_t dlist, uintptr_t addr, size_t len, uint64_t dev_id, const char *remote_agent)
{
    CHECK_HANDLE(dlist, M_REMDLIST);
    return dl_add(XL(dlist), addr, len, dev_id, remote_agent, remote_agent != NULL ? strlen(remote_agent) + 1 : 0);
}
#endif

/* ------------------------------------------------------------------ J. registration */

static int memory_type_usable(int mem)
{
    if (mem == NIXL_CAPI_MEM_DRAM) {
        return ST_OK;
    }
    if (mem == NIXL_CAPI_MEM_VRAM) {
        /* like a UCX built without CUDA, unless tests ask to treat device pointers as host ones */
        return g_vram_as_host ? ST_OK : ST_BACKEND;
    }
    return ST_NOTFOUND;
}

API nixl_capi_status_t nixl_capi_register_mem(nixl_capi_agent_t a, nixl_capi_reg_dlist_t dlist, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(dlist, M_RDLIST);
    if (opt_args != NULL) {
        CHECK_HANDLE(opt_args, M_OPT);
    }
    FAULT("register_mem");
    enter(a);
    int status = a->has_ucx ? memory_type_usable(XL(dlist)->mem) : ST_NOTFOUND;
    if (status == ST_OK) {
        pthread_mutex_lock(&a->mu);
        for (size_t i = 0; i < XL(dlist)->n; i++) {
            const struct desc *d = &XL(dlist)->d[i];
            GROW(a->regs, a->regs_cap, a->nregs + 1);
            a->regs[a->nregs++] = (struct region) { .mem = XL(dlist)->mem, .addr = d->addr, .len = d->len, .dev = d->dev };
        }
        pthread_mutex_unlock(&a->mu);
    }
    leave(a);
    return ret(status);
}

static int overlaps(uint64_t a_addr, uint64_t a_len, uint64_t b_addr, uint64_t b_len)
{
    return a_addr < b_addr + b_len && b_addr < a_addr + a_len;
}

API nixl_capi_status_t nixl_capi_deregister_mem(nixl_capi_agent_t a, nixl_capi_reg_dlist_t dlist, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(dlist, M_RDLIST);
    if (opt_args != NULL) {
        CHECK_HANDLE(opt_args, M_OPT);
    }
    FAULT("deregister_mem");
    enter(a);
    int status = a->has_ucx ? ST_OK : ST_NOTFOUND;
    const struct dlist *l = XL(dlist);
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < l->n && status == ST_OK; i++) {
        int found = 0;
        for (size_t k = 0; k < a->nregs; k++) {
            const struct region *r = &a->regs[k];
            if (r->mem == l->mem && r->addr == l->d[i].addr && r->len == l->d[i].len && r->dev == l->d[i].dev) {
                found = 1;
                break;
            }
        }
        if (!found) {
            status = ST_NOTFOUND;
        }
        for (req_t *r = a->live; r != NULL && status == ST_OK; r = r->next_live) {
            if (r->state != REQ_IN_PROG || r->local_mem != l->mem) {
                continue;
            }
            for (size_t t = 0; t < r->n; t++) {
                if (overlaps(r->t[t].local, r->t[t].len, l->d[i].addr, l->d[i].len)) {
                    misuse(__func__, "deregistering memory an in-flight transfer still touches");
                    status = ST_BACKEND;
                    break;
                }
            }
        }
    }
    if (status == ST_OK) {
        for (size_t i = 0; i < l->n; i++) {
            for (size_t k = 0; k < a->nregs; k++) {
                struct region *r = &a->regs[k];
                if (r->mem == l->mem && r->addr == l->d[i].addr && r->len == l->d[i].len && r->dev == l->d[i].dev) {
                    a->regs[k] = a->regs[--a->nregs];
                    break;
                }
            }
        }
    }
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_query_mem(nixl_capi_agent_t a, nixl_capi_reg_dlist_t descs, nixl_capi_query_resp_list_t resp, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(descs, M_RDLIST);
    CHECK_HANDLE(resp, M_QRESP);
    if (opt_args == NULL || opt_args->hints != 1) {
        return ret(ST_INVAL);
    }
    fprintf(stderr, "nixl-fake: query_mem is unsupported in fake (UCX does not implement it either)\n");
    return ret(ST_BACKEND);
}

API nixl_capi_status_t nixl_capi_create_query_resp_list(nixl_capi_query_resp_list_t *list)
{
    CHECK_NULL(list);
    *list = alloc_object(sizeof(struct nixl_capi_query_resp_list_s), M_QRESP);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_destroy_query_resp_list(nixl_capi_query_resp_list_t list)
{
    CHECK_HANDLE(list, M_QRESP);
    retire_object(list);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_query_resp_list_size(nixl_capi_query_resp_list_t list, size_t *size)
{
    CHECK_HANDLE(list, M_QRESP);
    CHECK_NULL(size);
    *size = list->n;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_query_resp_list_has_value(nixl_capi_query_resp_list_t list, size_t index, bool *has_value)
{
    CHECK_HANDLE(list, M_QRESP);
    CHECK_NULL(has_value);
    if (index >= list->n) {
        return ret(ST_INVAL);
    }
    *has_value = false;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_query_resp_list_get_params(nixl_capi_query_resp_list_t list, size_t index, nixl_capi_params_t *params)
{
    CHECK_HANDLE(list, M_QRESP);
    CHECK_NULL(params);
    (void) index;
    return ret(ST_INVAL);
}

/* ------------------------------------------------------------------ K. metadata
 *
 * Blob, little-endian: "NXFK" u16 version=1 u16 flags, u32 N + name, u64 pid, u64 agent id,
 * u32 E + endpoint, u32 R + R x {u32 mem, u32 0, u64 addr, u64 len, u64 dev}, u32 CRC-32.
 */

struct buffer
{
    uint8_t *data;
    size_t n;
    size_t cap;
};

static void put(struct buffer *b, const void *data, size_t length)
{
    GROW(b->data, b->cap, b->n + length);
    memcpy(b->data + b->n, data, length);
    b->n += length;
}

static void put32(struct buffer *b, uint32_t v)
{
    put(b, &v, 4);
}

static void put64(struct buffer *b, uint64_t v)
{
    put(b, &v, 8);
}

static void encode_md(agent_t *a, const struct region *regions, size_t count, void **data, size_t *len)
{
    struct buffer b = { 0 };
    uint16_t version = 1;
    uint16_t flags = 3;
    put(&b, "NXFK", 4);
    put(&b, &version, 2);
    put(&b, &flags, 2);
    put32(&b, (uint32_t) strlen(a->name));
    put(&b, a->name, strlen(a->name));
    put64(&b, (uint64_t) getpid());
    put64(&b, a->id);
    put32(&b, (uint32_t) strlen(a->endpoint));
    put(&b, a->endpoint, strlen(a->endpoint));
    put32(&b, (uint32_t) count);
    for (size_t i = 0; i < count; i++) {
        put32(&b, (uint32_t) regions[i].mem);
        put32(&b, 0);
        put64(&b, regions[i].addr);
        put64(&b, regions[i].len);
        put64(&b, regions[i].dev);
    }
    put32(&b, crc32_of(b.data, b.n));
    *data = b.data;
    *len = b.n;
}

struct parsed_md
{
    char name[1024];
    uint64_t pid;
    uint64_t id;
    char endpoint[96];
    struct region *r;
    size_t nr;
};

static int take(const uint8_t **p, const uint8_t *end, void *out, size_t length)
{
    if ((size_t) (end - *p) < length) {
        return -1;
    }
    memcpy(out, *p, length);
    *p += length;
    return 0;
}

static int decode_md(const uint8_t *data, size_t len, struct parsed_md *md)
{
    memset(md, 0, sizeof(*md));
    if (len < 8 + 4 || memcmp(data, "NXFK", 4) != 0) {
        return -1;
    }
    uint32_t crc;
    memcpy(&crc, data + len - 4, 4);
    if (crc != crc32_of(data, len - 4)) {
        return -1;
    }
    const uint8_t *p = data + 8;
    const uint8_t *end = data + len - 4;
    uint32_t n;
    if (take(&p, end, &n, 4) || n == 0 || n >= sizeof(md->name) || take(&p, end, md->name, n)) {
        return -1;
    }
    if (take(&p, end, &md->pid, 8) || take(&p, end, &md->id, 8)) {
        return -1;
    }
    if (take(&p, end, &n, 4) || n >= sizeof(md->endpoint) || take(&p, end, md->endpoint, n)) {
        return -1;
    }
    if (take(&p, end, &n, 4) || (size_t) (end - p) != (size_t) n * 32) {
        return -1;
    }
    md->r = calloc(n > 0 ? n : 1, sizeof(struct region));
    md->nr = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t mem = 0;
        uint32_t reserved = 0;
        take(&p, end, &mem, 4);
        take(&p, end, &reserved, 4);
        take(&p, end, &md->r[i].addr, 8);
        take(&p, end, &md->r[i].len, 8);
        take(&p, end, &md->r[i].dev, 8);
        md->r[i].mem = (int) mem;
    }
    return 0;
}

API nixl_capi_status_t nixl_capi_get_local_md(nixl_capi_agent_t a, void **data, size_t *len)
{
    CHECK_AGENT(a);
    CHECK_NULL(data);
    CHECK_NULL(len);
    FAULT("get_local_md");
    enter(a);
    int status = ST_DEEP_INVAL;
    if (a->has_ucx) {
        pthread_mutex_lock(&a->mu);
        encode_md(a, a->regs, a->nregs, data, len);
        pthread_mutex_unlock(&a->mu);
        status = ST_OK;
    }
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_get_local_partial_md(nixl_capi_agent_t a, nixl_capi_reg_dlist_t descs, void **data, size_t *len, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(descs, M_RDLIST);
    CHECK_NULL(data);
    CHECK_NULL(len);
    (void) opt_args;
    enter(a);
    int status = a->has_ucx ? ST_OK : ST_NOTFOUND;
    const struct dlist *l = XL(descs);
    struct region *subset = calloc(l->n > 0 ? l->n : 1, sizeof(struct region));
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < l->n && status == ST_OK; i++) {
        subset[i] = (struct region) { .mem = l->mem, .addr = l->d[i].addr, .len = l->d[i].len, .dev = l->d[i].dev };
        if (!covered(a->regs, a->nregs, l->mem, l->d[i].addr, l->d[i].len, l->d[i].dev)) {
            status = ST_NOTFOUND;
        }
    }
    if (status == ST_OK) {
        encode_md(a, subset, l->n, data, len);
    }
    pthread_mutex_unlock(&a->mu);
    free(subset);
    leave(a);
    return ret(status);
}

static struct conn *open_connection(agent_t *a, struct peer *p, const char *endpoint)
{
    if (strncmp(endpoint, "unix:@", 6) != 0) {
        return NULL;
    }
    struct sockaddr_un address;
    socklen_t length;
    make_address(endpoint, &address, &length);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return NULL;
    }
    if (connect(fd, (struct sockaddr *) &address, length) != 0) {
        close(fd);
        return NULL;
    }
    struct conn *c = calloc(1, sizeof(*c));
    c->fd = fd;
    c->agent = a;
    c->peer = p;
    pthread_mutex_init(&c->write_lock, NULL);
    struct frame hello = { .type = F_HELLO, .len = strlen(a->name) };
    if (send_frame(c, &hello, a->name, hello.len) != 0 || pthread_create(&c->reader, NULL, read_replies, c) != 0) {
        close(fd);
        pthread_mutex_destroy(&c->write_lock);
        free(c);
        return NULL;
    }
    c->reader_started = 1;
    return c;
}

API nixl_capi_status_t nixl_capi_load_remote_md(nixl_capi_agent_t a, const void *data, size_t len, char **agent_name)
{
    CHECK_AGENT(a);
    CHECK_NULL(data);
    CHECK_NULL(agent_name);
    if (len == 0) {
        return ret(ST_INVAL);
    }
    FAULT("load_remote_md");
    enter(a);
    struct parsed_md md;
    int status = ST_OK;
    if (decode_md(data, len, &md) != 0) {
        status = ST_BACKEND;
    }
    else if (strcmp(md.name, a->name) == 0 && md.id == a->id) {
        status = ST_DEEP_INVAL;
    }
    if (status != ST_OK) {
        free(md.r);
        leave(a);
        return ret(status);
    }
    pthread_mutex_lock(&g_lock);
    int in_process = md.pid == (uint64_t) getpid() && find_agent_locked(md.id) != NULL;
    pthread_mutex_unlock(&g_lock);

    pthread_mutex_lock(&a->mu);
    struct peer *known = find_peer(a, md.name);
    if (known != NULL && known->dropped) {
        /* NIXL forgot a disconnected peer: this load starts a new generation */
        known->valid = 0;
        known = NULL;
    }
    if (known != NULL) {
        if (known->id != md.id) {
            status = ST_BACKEND; /* changed connection info */
        }
        for (size_t i = 0; i < md.nr && status == ST_OK; i++) {
            int found = 0;
            for (size_t k = 0; k < known->nr; k++) {
                const struct region *r = &known->r[k];
                if (r->mem == md.r[i].mem && r->addr == md.r[i].addr && r->dev == md.r[i].dev) {
                    found = 1;
                    if (r->len != md.r[i].len) {
                        status = ST_BACKEND; /* NOT_ALLOWED: a known region with other key material */
                    }
                }
            }
            if (!found && status == ST_OK) {
                GROW(known->r, known->cap, known->nr + 1);
                known->r[known->nr++] = md.r[i];
            }
        }
        pthread_mutex_unlock(&a->mu);
    }
    else {
        pthread_mutex_unlock(&a->mu);
        struct peer *p = calloc(1, sizeof(*p));
        p->name = strdup(md.name);
        p->pid = md.pid;
        p->id = md.id;
        p->valid = 1;
        p->in_process = in_process;
        p->r = md.r;
        p->nr = md.nr;
        p->cap = md.nr;
        md.r = NULL;
        if (!in_process && (p->conn = open_connection(a, p, md.endpoint)) == NULL) {
            free(p->r);
            free(p->name);
            free(p);
            status = ST_BACKEND;
        }
        else {
            pthread_mutex_lock(&a->mu);
            p->next = a->peers;
            a->peers = p;
            pthread_mutex_unlock(&a->mu);
        }
    }
    free(md.r);
    if (status == ST_OK) {
        *agent_name = strdup(md.name);
    }
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_check_remote_md(nixl_capi_agent_t a, const char *remote_name, nixl_capi_xfer_dlist_t descs)
{
    CHECK_AGENT(a);
    CHECK_NULL(remote_name);
    if (descs != NULL) {
        CHECK_HANDLE(descs, M_XDLIST);
    }
    enter(a);
    pthread_mutex_lock(&a->mu);
    struct peer *p = find_peer(a, remote_name);
    int status = p != NULL && !p->dropped ? ST_OK : ST_NOTFOUND;
    for (size_t i = 0; status == ST_OK && descs != NULL && i < XL(descs)->n; i++) {
        const struct desc *d = &XL(descs)->d[i];
        if (!covered(p->r, p->nr, XL(descs)->mem, d->addr, d->len, d->dev)) {
            status = ST_NOTFOUND;
        }
    }
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_invalidate_remote_md(nixl_capi_agent_t a, const char *remote_agent)
{
    CHECK_AGENT(a);
    CHECK_NULL(remote_agent);
    FAULT("invalidate_remote_md");
    enter(a);
    if (strcmp(remote_agent, a->name) == 0) {
        leave(a);
        return ret(ST_DEEP_INVAL);
    }
    pthread_mutex_lock(&a->mu);
    struct peer *p = find_peer(a, remote_agent);
    if (p == NULL) {
        pthread_mutex_unlock(&a->mu);
        leave(a);
        return ret(ST_NOTFOUND);
    }
    p->valid = 0;
    if (p->prepared > 0) {
        misuse(__func__, "prepared handles of this peer are still live; release them before invalidating");
    }
    struct conn *c = p->conn;
    pthread_mutex_unlock(&a->mu);
    if (c != NULL) {
        /* disconnect: the reader sees the end of the stream and exits */
        shutdown(c->fd, SHUT_RDWR);
        if (c->reader_started) {
            pthread_join(c->reader, NULL);
            c->reader_started = 0;
        }
        close(c->fd);
        c->fd = -1;
        c->dead = 1;
    }
    leave(a);
    return ret(ST_OK);
}

static int unsupported(const char *function)
{
    fprintf(stderr, "nixl-fake: %s is unsupported in fake\n", function);
    return ret(ST_BACKEND);
}

API nixl_capi_status_t nixl_capi_send_local_md(nixl_capi_agent_t a, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    (void) opt_args;
    return unsupported(__func__);
}

API nixl_capi_status_t nixl_capi_send_local_partial_md(nixl_capi_agent_t a, nixl_capi_reg_dlist_t descs, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(descs, M_RDLIST);
    (void) opt_args;
    return unsupported(__func__);
}

API nixl_capi_status_t nixl_capi_fetch_remote_md(nixl_capi_agent_t a, const char *remote_name, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_NULL(remote_name);
    (void) opt_args;
    return unsupported(__func__);
}

API nixl_capi_status_t nixl_capi_invalidate_local_md(nixl_capi_agent_t a, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    (void) opt_args;
    return unsupported(__func__);
}

API nixl_capi_status_t nixl_capi_agent_make_connection(nixl_capi_agent_t a, const char *remote_agent, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_NULL(remote_agent);
    (void) opt_args;
    enter(a);
    pthread_mutex_lock(&a->mu);
    struct peer *p = find_peer(a, remote_agent);
    int status = p == NULL ? ST_NOTFOUND : p->dropped || (p->conn != NULL && p->conn->dead) ? ST_BACKEND : ST_OK;
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(status);
}

/* ------------------------------------------------------------------ L. transfers */

API nixl_capi_status_t nixl_capi_prep_xfer_dlist(nixl_capi_agent_t a, const char *agent_name, nixl_capi_xfer_dlist_t descs, nixl_capi_xfer_dlist_handle_t *dlist_hndl, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_NULL(agent_name);
    CHECK_HANDLE(descs, M_XDLIST);
    if (opt_args != NULL) {
        CHECK_HANDLE(opt_args, M_OPT);
    }
    FAULT("prep_xfer_dlist");
    enter(a);
    const struct dlist *l = XL(descs);
    int remote = agent_name[0] != '\0' && strcmp(agent_name, a->name) != 0;
    int status = l->n == 0 || !a->has_ucx || memory_type_usable(l->mem) != ST_OK ? ST_NOTFOUND : ST_OK;
    pthread_mutex_lock(&a->mu);
    struct peer *p = remote ? find_peer(a, agent_name) : NULL;
    if (remote && (p == NULL || p->dropped)) {
        status = ST_NOTFOUND;
    }
    int *regions = status == ST_OK ? malloc(l->n * sizeof(int)) : NULL;
    for (size_t i = 0; i < l->n && status == ST_OK; i++) {
        const struct desc *d = &l->d[i];
        regions[i] = remote ? covered(p->r, p->nr, l->mem, d->addr, d->len, d->dev) : covered(a->regs, a->nregs, l->mem, d->addr, d->len, d->dev);
        if (regions[i] == 0) {
            status = ST_NOTFOUND;
        }
    }
    if (status == ST_OK) {
        nixl_capi_xfer_dlist_handle_t h = calloc(1, sizeof(*h));
        h->magic = M_PREP;
        h->agent = a;
        h->remote = remote;
        h->peer = p;
        h->mem = l->mem;
        h->n = l->n;
        h->d = malloc(l->n * sizeof(struct desc));
        memcpy(h->d, l->d, l->n * sizeof(struct desc));
        for (size_t i = 0; i < h->n; i++) {
            h->d[i].meta = NULL;
        }
        h->run_end = malloc(h->n * sizeof(size_t));
        h->stride = malloc(h->n * sizeof(uint64_t));
        compute_runs(h, regions);
        if (p != NULL) {
            p->prepared++;
        }
        atomic_fetch_add(&s_live_prepared, 1);
        *dlist_hndl = h;
    }
    free(regions);
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_release_xfer_dlist_handle(nixl_capi_agent_t a, nixl_capi_xfer_dlist_handle_t h)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(h, M_PREP);
    if (h->agent != a) {
        return ret(misuse(__func__, "prepared handle of another agent"));
    }
    enter(a);
    pthread_mutex_lock(&a->mu);
    if (h->peer != NULL) {
        h->peer->prepared--;
    }
    pthread_mutex_unlock(&a->mu);
    free(h->d);
    free(h->run_end);
    free(h->stride);
    atomic_fetch_sub(&s_live_prepared, 1);
    retire(h);
    leave(a);
    return ret(ST_OK);
}

static int make_request(agent_t *a, int op, nixl_capi_xfer_dlist_handle_t local, const int *local_indices, size_t n_local,
        nixl_capi_xfer_dlist_handle_t remote, const int *remote_indices, size_t n_remote, req_t **out, nixl_capi_opt_args_t opt)
{
    if (local->remote || !remote->remote) {
        return ST_DEEP_INVAL;
    }
    if (n_local != n_remote || n_local == 0) {
        return ST_DEEP_INVAL;
    }
    if (op != NIXL_CAPI_XFER_OP_READ && op != NIXL_CAPI_XFER_OP_WRITE) {
        return ST_DEEP_INVAL;
    }
    if (local->agent != a || remote->agent != a) {
        return misuse("nixl_capi_make_xfer_req", "prepared handle of another agent");
    }
    if (!remote->peer->valid || remote->peer->dropped) {
        return ST_NOTFOUND;
    }
    if (local_indices == NULL || remote_indices == NULL) {
        return ST_DEEP_INVAL;
    }
    for (size_t i = 0; i < n_local; i++) {
        if (local_indices[i] < 0 || (size_t) local_indices[i] >= local->n || remote_indices[i] < 0 || (size_t) remote_indices[i] >= remote->n) {
            return ST_DEEP_INVAL;
        }
        if (local->d[local_indices[i]].len != remote->d[remote_indices[i]].len) {
            return ST_DEEP_INVAL;
        }
    }
    req_t *r = calloc(1, sizeof(*r));
    r->magic = M_REQ;
    r->agent = a;
    r->id = ++a->next_request_id;
    r->op = op;
    r->peer = remote->peer;
    r->local_mem = local->mem;
    r->remote_mem = remote->mem;
    r->local_dev = local->d[local_indices[0]].dev;
    r->remote_dev = remote->d[remote_indices[0]].dev;
    r->t = malloc(n_local * sizeof(struct triple));
    int merge = opt == NULL || !opt->skip_merge;
    for (size_t i = 0; i < n_local;) {
        size_t li = (size_t) local_indices[i];
        size_t ri = (size_t) remote_indices[i];
        const struct desc *l = &local->d[li];
        const struct desc *m = &remote->d[ri];
        size_t run = 1;
        if (merge && g_merge == MERGE_ADDRESS) {
            /* NIXL 0.10.1 to 1.3: consecutive pairs back to back in memory on both sides */
            while (i + run < n_local) {
                const struct desc *nl = &local->d[local_indices[i + run]];
                const struct desc *nm = &remote->d[remote_indices[i + run]];
                if (l->addr + run * l->len != nl->addr || m->addr + run * l->len != nm->addr || nl->len != l->len) {
                    break;
                }
                run++;
            }
        }
        else if (merge && local->stride[li] == l->len && local->stride[li] == remote->stride[ri]) {
            /* NIXL 1.4.0: indices advancing together inside dense runs of equal stride */
            size_t cap = local->run_end[li] - li;
            if (remote->run_end[ri] - ri < cap) {
                cap = remote->run_end[ri] - ri;
            }
            if (n_local - i < cap) {
                cap = n_local - i;
            }
            while (run < cap && (size_t) local_indices[i + run] == li + run && (size_t) remote_indices[i + run] == ri + run) {
                run++;
            }
        }
        r->bytes += run * l->len;
        r->t[r->n++] = (struct triple) { .local = l->addr, .remote = m->addr, .len = run * l->len };
        i += run;
    }
    if (opt != NULL && opt->has_notif) {
        r->has_notif = 1;
        r->notif = malloc(opt->msg_len > 0 ? opt->msg_len : 1);
        memcpy(r->notif, opt->msg, opt->msg_len);
        r->notif_len = opt->msg_len;
    }
    r->state = REQ_NOT_POSTED;
    r->next_live = a->live;
    if (a->live != NULL) {
        a->live->prev_live = r;
    }
    a->live = r;
    atomic_fetch_add(&s_live_requests, 1);
    *out = r;
    return ST_OK;
}

API nixl_capi_status_t nixl_capi_make_xfer_req(nixl_capi_agent_t a, nixl_capi_xfer_op_t operation, nixl_capi_xfer_dlist_handle_t local_descs,
        const int *local_indices, size_t local_indices_count, nixl_capi_xfer_dlist_handle_t remote_descs, const int *remote_indices,
        size_t remote_indices_count, nixl_capi_xfer_req_t *req_hndl, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(local_descs, M_PREP);
    CHECK_HANDLE(remote_descs, M_PREP);
    CHECK_NULL(req_hndl);
    if (opt_args != NULL) {
        CHECK_HANDLE(opt_args, M_OPT);
    }
    FAULT("make_xfer_req");
    enter(a);
    pthread_mutex_lock(&a->mu);
    int status = make_request(a, (int) operation, local_descs, local_indices, local_indices_count, remote_descs, remote_indices,
            remote_indices_count, req_hndl, opt_args);
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_create_xfer_req(nixl_capi_agent_t a, nixl_capi_xfer_op_t operation, nixl_capi_xfer_dlist_t local_descs,
        nixl_capi_xfer_dlist_t remote_descs, const char *remote_agent, nixl_capi_xfer_req_t *req_hndl, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(local_descs, M_XDLIST);
    CHECK_HANDLE(remote_descs, M_XDLIST);
    CHECK_NULL(remote_agent);
    CHECK_NULL(req_hndl);
    if (XL(local_descs)->n != XL(remote_descs)->n || remote_agent[0] == '\0') {
        return ret(ST_BACKEND);
    }
    nixl_capi_xfer_dlist_handle_t local = NULL;
    nixl_capi_xfer_dlist_handle_t remote = NULL;
    if ((int) nixl_capi_prep_xfer_dlist(a, "", local_descs, &local, opt_args) != ST_OK) {
        return ret(ST_BACKEND);
    }
    if ((int) nixl_capi_prep_xfer_dlist(a, remote_agent, remote_descs, &remote, opt_args) != ST_OK) {
        nixl_capi_release_xfer_dlist_handle(a, local);
        return ret(ST_BACKEND);
    }
    size_t n = XL(local_descs)->n;
    int *indices = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
        indices[i] = (int) i;
    }
    int status;
    enter(a);
    pthread_mutex_lock(&a->mu);
    /* the one-shot form never merges */
    int skip = opt_args != NULL ? opt_args->skip_merge : 0;
    if (opt_args != NULL) {
        opt_args->skip_merge = true;
    }
    struct nixl_capi_opt_args_s no_merge = { .magic = M_OPT, .skip_merge = true };
    status = make_request(a, (int) operation, local, indices, n, remote, indices, n, req_hndl, opt_args != NULL ? opt_args : &no_merge);
    if (opt_args != NULL) {
        opt_args->skip_merge = skip;
    }
    pthread_mutex_unlock(&a->mu);
    leave(a);
    free(indices);
    nixl_capi_release_xfer_dlist_handle(a, remote);
    nixl_capi_release_xfer_dlist_handle(a, local);
    return ret(status == ST_OK ? ST_OK : ST_BACKEND);
}

API nixl_capi_status_t nixl_capi_estimate_xfer_cost(nixl_capi_agent_t a, nixl_capi_xfer_req_t req_hndl, nixl_capi_opt_args_t opt_args,
        int64_t *duration_us, int64_t *err_margin_us, nixl_capi_cost_t *method)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(req_hndl, M_REQ);
    CHECK_NULL(duration_us);
    CHECK_NULL(err_margin_us);
    CHECK_NULL(method);
    (void) opt_args;
    if (req_hndl->released) {
        return ret(misuse(__func__, "request was released"));
    }
    /* a trivial model: 10 GB/s */
    *duration_us = (int64_t) (req_hndl->bytes / 10000u);
    *err_margin_us = 0;
    *method = NIXL_CAPI_COST_ANALYTICAL_BACKEND;
    return ret(ST_OK);
}

static void start_worker(agent_t *a)
{
    if (!a->worker_started && pthread_create(&a->worker, NULL, work_loop, a) == 0) {
        a->worker_started = 1;
    }
}

API nixl_capi_status_t nixl_capi_post_xfer_req(nixl_capi_agent_t a, nixl_capi_xfer_req_t r, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(r, M_REQ);
    if (opt_args != NULL) {
        CHECK_HANDLE(opt_args, M_OPT);
    }
    if (r->released) {
        return ret(ST_DEEP_INVAL);
    }
    FAULT("post_xfer_req");
    enter(a);
    pthread_mutex_lock(&a->mu);
    int status = ST_INPROG;
    if (r->agent != a) {
        status = misuse(__func__, "request of another agent");
    }
    else if (r->state == REQ_IN_PROG) {
        status = ST_BACKEND; /* REPOST_ACTIVE */
    }
    else if (!r->peer->valid) {
        status = ST_NOTFOUND;
    }
    else if (r->peer->dropped || (r->peer->conn != NULL && r->peer->conn->dead)) {
        status = ST_BACKEND; /* remote disconnect: NIXL drops the peer's metadata */
        r->peer->dropped = 1;
    }
    if (status != ST_INPROG) {
        pthread_mutex_unlock(&a->mu);
        leave(a);
        return ret(status);
    }
    if (opt_args != NULL) {
        /* NIXL's trap: opt_args without a notification clears the one given at make time */
        free(r->notif);
        r->notif = NULL;
        r->notif_len = 0;
        r->has_notif = opt_args->has_notif;
        if (r->has_notif) {
            r->notif = malloc(opt_args->msg_len > 0 ? opt_args->msg_len : 1);
            memcpy(r->notif, opt_args->msg, opt_args->msg_len);
            r->notif_len = opt_args->msg_len;
        }
    }
    r->state = REQ_IN_PROG;
    r->error = 0;
    r->data_done = 0;
    r->notif_sent = 0;
    r->replies_pending = r->n;
    r->polls_left = g_completion == COMPLETE_POLLS ? g_completion_polls : 0;
    atomic_store(&r->cancel, 0);
    r->posted_us = now_us();
    r->done_us = 0;
    atomic_fetch_add(&s_posted, 1);
    if (r->peer->in_process && g_completion != COMPLETE_ASYNC) {
        pthread_mutex_unlock(&a->mu);
        int copied = copy_in_process(a, r);
        pthread_mutex_lock(&a->mu);
        if (copied != ST_OK) {
            r->state = REQ_ERROR;
            r->error = copied;
            status = copied;
        }
        else {
            r->data_done = 1;
            r->done_us = now_us();
            if (g_completion == COMPLETE_INLINE) {
                status = finish_locked(a, r);
            }
        }
    }
    else {
        start_worker(a);
        r->queued = 1;
        r->next_work = NULL;
        if (a->work_tail != NULL) {
            a->work_tail->next_work = r;
        }
        else {
            a->work_head = r;
        }
        a->work_tail = r;
        pthread_cond_broadcast(&a->cond);
    }
    r->post_return_us = now_us();
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_get_xfer_status(nixl_capi_agent_t a, nixl_capi_xfer_req_t r)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(r, M_REQ);
    if (r->released) {
        /* NIXL dereferences NULL here; the fake reports the misuse instead */
        return ret(misuse(__func__, "status of a released request"));
    }
    enter(a);
    int status;
    pthread_mutex_lock(&a->mu);
    int fault_status;
    if (r->state == REQ_IN_PROG && fault_hit("get_xfer_status", &fault_status)) {
        r->state = REQ_ERROR;
        r->error = fault_status;
    }
    switch (r->state) {
        case REQ_NOT_POSTED:
            status = ST_BACKEND;
            break;
        case REQ_ERROR:
            status = r->error;
            if (r->peer->conn != NULL && r->peer->conn->dead) {
                r->peer->dropped = 1; /* remote disconnect seen: NIXL drops the peer's metadata */
            }
            break;
        case REQ_DONE:
            status = ST_OK;
            break;
        default:
            if (!r->peer->valid) {
                r->state = REQ_ERROR;
                r->error = ST_NOTFOUND;
                status = ST_NOTFOUND;
            }
            else if (!r->data_done && r->peer->conn != NULL && r->peer->conn->dead) {
                /* UCX fails what is still outstanding on an endpoint that failed */
                r->state = REQ_ERROR;
                r->error = ST_BACKEND;
                r->peer->dropped = 1;
                status = ST_BACKEND;
            }
            else if (r->polls_left > 0) {
                r->polls_left--;
                status = ST_INPROG;
            }
            else if (!r->data_done) {
                status = ST_INPROG;
            }
            else {
                /* the first status call that sees the data complete sends the notification */
                status = finish_locked(a, r);
            }
            break;
    }
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_query_xfer_backend(nixl_capi_agent_t a, nixl_capi_xfer_req_t r, nixl_capi_backend_t *backend)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(r, M_REQ);
    CHECK_NULL(backend);
    if (r->released) {
        return ret(misuse(__func__, "request was released"));
    }
    nixl_capi_backend_t b = alloc_object(sizeof(struct nixl_capi_backend_s), M_BACKEND);
    b->agent = a;
    *backend = b;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_get_xfer_telemetry(nixl_capi_agent_t a, nixl_capi_xfer_req_t r, nixl_capi_xfer_telemetry_t telemetry)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(r, M_REQ);
    CHECK_NULL(telemetry);
    if (!a->cfg.capture_telemetry) {
        return ret(ST_NOTELEM);
    }
    if (r->released) {
        return ret(misuse(__func__, "request was released"));
    }
    enter(a);
    pthread_mutex_lock(&a->mu);
    int status = r->state == REQ_DONE ? ST_OK : r->state == REQ_IN_PROG ? ST_INPROG : ST_BACKEND;
    if (status == ST_OK) {
        telemetry->start_time_us = r->posted_us;
        telemetry->post_duration_us = r->post_return_us - r->posted_us;
        telemetry->xfer_duration_us = r->done_us - r->posted_us;
        telemetry->total_bytes = r->bytes;
        telemetry->desc_count = r->n;
    }
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_release_xfer_req(nixl_capi_agent_t a, nixl_capi_xfer_req_t r)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(r, M_REQ);
    if (r->released) {
        return ret(ST_INVAL);
    }
    FAULT("release_xfer_req");
    enter(a);
    pthread_mutex_lock(&a->mu);
    if (r->state == REQ_IN_PROG) {
        /* cancel: skip copies not yet done, abandon frames not yet acknowledged, send no notification */
        atomic_store(&r->cancel, 1);
        if (r->queued) {
            req_t **p = &a->work_head;
            req_t *previous = NULL;
            while (*p != NULL && *p != r) {
                previous = *p;
                p = &(*p)->next_work;
            }
            if (*p == r) {
                *p = r->next_work;
                if (a->work_tail == r) {
                    a->work_tail = previous;
                }
            }
            r->queued = 0;
        }
        while (r->busy) {
            pthread_cond_wait(&a->cond, &a->mu);
        }
    }
    if (r->prev_live != NULL) {
        r->prev_live->next_live = r->next_live;
    }
    else {
        a->live = r->next_live;
    }
    if (r->next_live != NULL) {
        r->next_live->prev_live = r->prev_live;
    }
    free_request_contents(r);
    r->released = 1;
    pthread_mutex_unlock(&a->mu);
    leave(a);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_destroy_xfer_req(nixl_capi_xfer_req_t r)
{
    CHECK_HANDLE(r, M_REQ);
    if (!r->released) {
        return ret(ST_STATE);
    }
    atomic_fetch_sub(&s_live_requests, 1);
    retire(r);
    return ret(ST_OK);
}

/* ------------------------------------------------------------------ M. notifications */

static void map_append(nixl_capi_notif_map_t map, char *sender, void *data, size_t len)
{
    struct sender *s = NULL;
    for (size_t i = 0; i < map->n; i++) {
        if (strcmp(map->s[i].name, sender) == 0) {
            s = &map->s[i];
            free(sender);
            break;
        }
    }
    if (s == NULL) {
        GROW(map->s, map->cap, map->n + 1);
        s = &map->s[map->n++];
        memset(s, 0, sizeof(*s));
        s->name = sender;
    }
    GROW(s->m, s->cap, s->n + 1);
    s->m[s->n++] = (struct msg) { .data = data, .len = len };
}

static void map_clear(nixl_capi_notif_map_t map)
{
    for (size_t i = 0; i < map->n; i++) {
        for (size_t k = 0; k < map->s[i].n; k++) {
            free(map->s[i].m[k].data);
        }
        free(map->s[i].m);
        free(map->s[i].name);
    }
    map->n = 0;
}

API nixl_capi_status_t nixl_capi_get_notifs(nixl_capi_agent_t a, nixl_capi_notif_map_t notif_map, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(notif_map, M_NMAP);
    (void) opt_args;
    FAULT("get_notifs");
    enter(a);
    if (!a->has_ucx) {
        leave(a);
        return ret(ST_BACKEND);
    }
    pthread_mutex_lock(&a->mu);
    struct notif *n = a->queue_head;
    a->queue_head = NULL;
    a->queue_tail = NULL;
    pthread_mutex_unlock(&a->mu);
    while (n != NULL) {
        struct notif *next = n->next;
        map_append(notif_map, n->sender, n->data, n->len);
        free(n);
        n = next;
    }
    leave(a);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_gen_notif(nixl_capi_agent_t a, const char *remote_agent, const void *data, size_t len, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_NULL(remote_agent);
    (void) opt_args;
    if (data == NULL && len > 0) {
        return ret(ST_INVAL);
    }
    FAULT("gen_notif");
    enter(a);
    int status;
    if (strcmp(remote_agent, a->name) == 0) {
        pthread_mutex_lock(&a->mu);
        append_notif(a, a->name, data, len);
        pthread_mutex_unlock(&a->mu);
        status = ST_OK;
    }
    else {
        pthread_mutex_lock(&a->mu);
        struct peer *p = find_peer(a, remote_agent);
        status = p == NULL ? ST_NOTFOUND : p->dropped ? ST_BACKEND : ST_OK;
        pthread_mutex_unlock(&a->mu);
        if (status == ST_OK) {
            /* a notification to a peer that died fails, but NIXL 1.4.0 keeps its metadata: only a transfer drops it */
            status = deliver_notif(a, p, data, len);
        }
    }
    leave(a);
    return ret(status);
}

API nixl_capi_status_t nixl_capi_create_notif_map(nixl_capi_notif_map_t *notif_map)
{
    CHECK_NULL(notif_map);
    *notif_map = alloc_object(sizeof(struct nixl_capi_notif_map_s), M_NMAP);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_destroy_notif_map(nixl_capi_notif_map_t notif_map)
{
    CHECK_HANDLE(notif_map, M_NMAP);
    map_clear(notif_map);
    free(notif_map->s);
    retire_object(notif_map);
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_notif_map_size(nixl_capi_notif_map_t map, size_t *size)
{
    CHECK_HANDLE(map, M_NMAP);
    CHECK_NULL(size);
    *size = map->n;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_notif_map_get_agent_at(nixl_capi_notif_map_t map, size_t index, const char **agent_name)
{
    CHECK_HANDLE(map, M_NMAP);
    CHECK_NULL(agent_name);
    if (index >= map->n) {
        /* NIXL walks past the end for index > size; the fake checks */
        return ret(index == map->n ? ST_INVAL : misuse(__func__, "index beyond the map size"));
    }
    *agent_name = map->s[index].name;
    return ret(ST_OK);
}

static struct sender *map_find(nixl_capi_notif_map_t map, const char *name)
{
    for (size_t i = 0; i < map->n; i++) {
        if (strcmp(map->s[i].name, name) == 0) {
            return &map->s[i];
        }
    }
    return NULL;
}

API nixl_capi_status_t nixl_capi_notif_map_get_notifs_size(nixl_capi_notif_map_t map, const char *agent_name, size_t *size)
{
    CHECK_HANDLE(map, M_NMAP);
    CHECK_NULL(agent_name);
    CHECK_NULL(size);
    struct sender *s = map_find(map, agent_name);
    if (s == NULL) {
        return ret(ST_INVAL);
    }
    *size = s->n;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_notif_map_get_notif(nixl_capi_notif_map_t map, const char *agent_name, size_t index, const void **data, size_t *len)
{
    CHECK_HANDLE(map, M_NMAP);
    CHECK_NULL(agent_name);
    CHECK_NULL(data);
    CHECK_NULL(len);
    struct sender *s = map_find(map, agent_name);
    if (s == NULL || index >= s->n) {
        return ret(ST_INVAL);
    }
    *data = s->m[index].data;
    *len = s->m[index].len;
    return ret(ST_OK);
}

API nixl_capi_status_t nixl_capi_notif_map_clear(nixl_capi_notif_map_t map)
{
    CHECK_HANDLE(map, M_NMAP);
    map_clear(map);
    return ret(ST_OK);
}

/* ------------------------------------------------------------------ N. memory views (HEAD only) */

#ifndef FAKE_API_1_4
API nixl_capi_status_t nixl_capi_prep_mem_view_local(nixl_capi_agent_t a, nixl_capi_xfer_dlist_t descs, nixl_capi_mem_view_t *mvh, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(descs, M_XDLIST);
    CHECK_NULL(mvh);
    (void) opt_args;
    return unsupported(__func__);
}

API nixl_capi_status_t nixl_capi_prep_mem_view_remote(nixl_capi_agent_t a, nixl_capi_remote_dlist_t descs, nixl_capi_mem_view_t *mvh, nixl_capi_opt_args_t opt_args)
{
    CHECK_AGENT(a);
    CHECK_HANDLE(descs, M_REMDLIST);
    CHECK_NULL(mvh);
    (void) opt_args;
    return unsupported(__func__);
}

API nixl_capi_status_t nixl_capi_release_mem_view(nixl_capi_agent_t a, nixl_capi_mem_view_t mvh)
{
    CHECK_AGENT(a);
    CHECK_NULL(mvh);
    return unsupported(__func__);
}
#endif

/* ------------------------------------------------------------------ O. misc */

API bool nixl_capi_is_stub(void)
{
    return true;
}
