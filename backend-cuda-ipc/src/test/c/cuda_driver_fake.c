/*
 * A functional fake of the CUDA driver API (libcuda.so.1) for kvbridge's tests: the driver's symbol
 * names and ABI for exactly the functions the cuda-ipc binding uses, our own implementation.
 *
 * "Device memory" is POSIX shared memory mapped into the process, so it can be shared like the real
 * thing: cuMemAlloc memory is a named shm object whose name travels in the 64-byte IPC handle
 * (cuIpcOpenMemHandle maps it again in another process); cuMemCreate memory is a memfd, exported and
 * imported as a POSIX file descriptor and mapped into reserved address ranges (cuMemMap), readable
 * only after cuMemSetAccess. Each stream is a worker thread that runs copies in order; an event
 * completes when the worker reaches it, reporting the first copy error since the previous event.
 * Every call but cuDriverGetVersion and cuGetErrorName needs cuInit, and every memory and stream call
 * needs a current context on the calling thread (cuCtxSetCurrent), as the real driver does.
 *
 * Environment, read by cuInit: KVBFAKE_DEVICES (default 1), KVBFAKE_DRIVER_VERSION (default 13000).
 * Tests steer the rest at run time through kvbfake_control(key, value) and read counters with
 * kvbfake_stat(key); both exist only here, which is how the binding recognises the fake.
 *
 * Build: gcc -std=c11 -shared -fPIC -pthread -fvisibility=hidden -Wl,-soname,libcuda.so.1 -lrt
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

/* ------------------------------------------------------------------ driver types (x86-64 ABI) */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
    int type;
    int requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct { unsigned char compressionType, gpuDirectRDMACapable; unsigned short usage; unsigned char reserved[4]; } allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef struct { int srcAccessOrder; CUmemLocation srcLocHint, dstLocHint; unsigned int flags; } CUmemcpyAttributes;

enum {
    OK = 0, E_INVALID_VALUE = 1, E_OUT_OF_MEMORY = 2, E_NOT_INITIALIZED = 3, E_NO_DEVICE = 100, E_INVALID_DEVICE = 101,
    E_INVALID_CONTEXT = 201, E_MAP_FAILED = 205, E_INVALID_HANDLE = 400, E_NOT_FOUND = 500, E_NOT_READY = 600, E_ILLEGAL_ADDRESS = 700,
    E_HOST_ALREADY_REGISTERED = 712, E_HOST_NOT_REGISTERED = 713, E_NOT_SUPPORTED = 801, E_UNKNOWN = 999
};

/* ------------------------------------------------------------------ state */

enum { K_FREE, K_LEGACY, K_IPC_OPEN, K_PHYS, K_RESERVE, K_MAP, K_HOSTREG };

typedef struct {
    int kind;
    uint64_t base, size;
    int device;
    int refs;           /* K_IPC_OPEN: opens; K_PHYS: handle references */
    int maps;           /* K_PHYS: mappings */
    int fd;             /* K_PHYS: the memfd */
    int imported;       /* K_PHYS: came from cuMemImportFromShareableHandle */
    int handleTypes;    /* K_PHYS: requested handle types */
    int phys;           /* K_MAP: index of the K_PHYS entry */
    int access;         /* K_MAP: cuMemSetAccess done */
    char name[48];      /* K_LEGACY, K_IPC_OPEN: shm name */
} entry;

#define MAX_ENTRIES 8192
#define GRANULARITY (2u << 20)
#define HANDLE_TAG 0xC0DE000000000000ull
#define IPC_MAGIC 0x4642564bu /* "KVBF" */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry entries[MAX_ENTRIES];
static int initialized;
static int device_count = 1;
static int driver_version = 13000;
static atomic_uint shm_sequence;
static __thread int current_device = -1;
static int contexts[64];
static int primary_refs[64];

/* test steering, see kvbfake_control */
static atomic_int no_device, ipc_supported = 1, fail_copies, fail_opens, fail_allocs, copy_delay_us, vmm_supported = 1, batch_supported = 1, fail_batches,
    queue_limit;
static atomic_long copies_done, copy_calls, batch_calls, batch_copies;

typedef struct { int magic, version, pid, pad; uint64_t size; char name[40]; } ipc_payload;

static int find(int kind, uint64_t address)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        if (entries[i].kind == kind && address >= entries[i].base && address - entries[i].base < entries[i].size) {
            return i;
        }
    }
    return -1;
}

static int find_device_range(uint64_t address)
{
    int i = find(K_LEGACY, address);
    if (i < 0) i = find(K_IPC_OPEN, address);
    if (i < 0) i = find(K_MAP, address);
    return i;
}

static int take_entry(void)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        if (entries[i].kind == K_FREE) {
            memset(&entries[i], 0, sizeof(entries[i]));
            entries[i].fd = -1;
            return i;
        }
    }
    return -1;
}

static int take_one(atomic_int *counter)
{
    int value = atomic_load(counter);
    while (value > 0) {
        if (atomic_compare_exchange_weak(counter, &value, value - 1)) return 1;
    }
    return 0;
}

#define NEED_INIT() do { if (!initialized) return E_NOT_INITIALIZED; } while (0)
#define NEED_CONTEXT() do { NEED_INIT(); if (current_device < 0) return E_INVALID_CONTEXT; } while (0)

/* ------------------------------------------------------------------ init, devices, contexts */

API CUresult cuInit(unsigned int flags)
{
    if (flags != 0) return E_INVALID_VALUE;
    if (atomic_load(&no_device)) return E_NO_DEVICE;
    pthread_mutex_lock(&lock);
    const char *devices = getenv("KVBFAKE_DEVICES");
    const char *version = getenv("KVBFAKE_DRIVER_VERSION");
    if (devices != NULL) device_count = atoi(devices);
    if (version != NULL) driver_version = atoi(version);
    if (device_count < 0 || device_count > 64) device_count = 1;
    initialized = device_count > 0;
    pthread_mutex_unlock(&lock);
    return device_count > 0 ? OK : E_NO_DEVICE;
}

API CUresult cuDriverGetVersion(int *version)
{
    if (version == NULL) return E_INVALID_VALUE;
    *version = driver_version;
    return OK;
}

API CUresult cuDeviceGetCount(int *count)
{
    NEED_INIT();
    if (count == NULL) return E_INVALID_VALUE;
    *count = device_count;
    return OK;
}

API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    NEED_INIT();
    if (device == NULL) return E_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= device_count) return E_INVALID_DEVICE;
    *device = ordinal;
    return OK;
}

API CUresult cuDeviceGetName(char *name, int length, CUdevice device)
{
    NEED_INIT();
    if (name == NULL || length <= 0) return E_INVALID_VALUE;
    if (device < 0 || device >= device_count) return E_INVALID_DEVICE;
    snprintf(name, (size_t) length, "kvbridge fake device %d", device);
    return OK;
}

API CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device)
{
    NEED_INIT();
    if (value == NULL) return E_INVALID_VALUE;
    if (device < 0 || device >= device_count) return E_INVALID_DEVICE;
    switch (attribute) {
        case 41: *value = 1; break;                                  /* UNIFIED_ADDRESSING */
        case 102: *value = atomic_load(&vmm_supported); break;       /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
        case 103: *value = atomic_load(&vmm_supported) && atomic_load(&ipc_supported); break; /* POSIX_FD handles */
        case 125: *value = atomic_load(&ipc_supported); break;       /* IPC_EVENT_SUPPORTED */
        default: return E_INVALID_VALUE;
    }
    return OK;
}

API CUresult cuDevicePrimaryCtxRetain(void **context, CUdevice device)
{
    NEED_INIT();
    if (context == NULL) return E_INVALID_VALUE;
    if (device < 0 || device >= device_count) return E_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    primary_refs[device]++;
    contexts[device] = device;
    pthread_mutex_unlock(&lock);
    *context = &contexts[device];
    return OK;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device)
{
    NEED_INIT();
    if (device < 0 || device >= device_count) return E_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    int refs = primary_refs[device];
    if (refs > 0) primary_refs[device]--;
    pthread_mutex_unlock(&lock);
    return refs > 0 ? OK : E_INVALID_CONTEXT;
}

API CUresult cuCtxSetCurrent(void *context)
{
    NEED_INIT();
    if (context == NULL) {
        current_device = -1;
        return OK;
    }
    int *ctx = context;
    if (ctx < &contexts[0] || ctx >= &contexts[64] || primary_refs[ctx - contexts] == 0) return E_INVALID_CONTEXT;
    current_device = (int) (ctx - contexts);
    return OK;
}

API CUresult cuGetErrorName(CUresult error, const char **name)
{
    if (name == NULL) return E_INVALID_VALUE;
    switch (error) {
        case OK: *name = "CUDA_SUCCESS"; break;
        case E_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
        case E_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
        case E_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
        case E_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
        case E_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
        case E_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
        case E_MAP_FAILED: *name = "CUDA_ERROR_MAP_FAILED"; break;
        case E_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
        case E_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
        case E_NOT_READY: *name = "CUDA_ERROR_NOT_READY"; break;
        case E_ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
        case E_HOST_ALREADY_REGISTERED: *name = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; break;
        case E_HOST_NOT_REGISTERED: *name = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; break;
        case E_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
        case E_UNKNOWN: *name = "CUDA_ERROR_UNKNOWN"; break;
        default: *name = NULL; return E_INVALID_VALUE;
    }
    return OK;
}

/* ------------------------------------------------------------------ cuMemAlloc memory and legacy IPC */

API CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes)
{
    NEED_CONTEXT();
    if (pointer == NULL || bytes == 0) return E_INVALID_VALUE;
    if (take_one(&fail_allocs)) return E_OUT_OF_MEMORY;
    char name[48];
    snprintf(name, sizeof(name), "/kvbfake-%d-%u", (int) getpid(), atomic_fetch_add(&shm_sequence, 1));
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return E_OUT_OF_MEMORY;
    if (ftruncate(fd, (off_t) bytes) != 0) {
        close(fd);
        shm_unlink(name);
        return E_OUT_OF_MEMORY;
    }
    void *mapped = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) {
        shm_unlink(name);
        return E_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&lock);
    int i = take_entry();
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        munmap(mapped, bytes);
        shm_unlink(name);
        return E_OUT_OF_MEMORY;
    }
    entries[i].kind = K_LEGACY;
    entries[i].base = (uint64_t) mapped;
    entries[i].size = bytes;
    entries[i].device = current_device;
    snprintf(entries[i].name, sizeof(entries[i].name), "%s", name);
    pthread_mutex_unlock(&lock);
    *pointer = (CUdeviceptr) mapped;
    return OK;
}

API CUresult cuMemFree_v2(CUdeviceptr pointer)
{
    NEED_CONTEXT();
    pthread_mutex_lock(&lock);
    int i = find(K_LEGACY, pointer);
    if (i < 0 || entries[i].base != pointer) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    munmap((void *) entries[i].base, entries[i].size);
    shm_unlink(entries[i].name);
    entries[i].kind = K_FREE;
    pthread_mutex_unlock(&lock);
    return OK;
}

API CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr pointer)
{
    NEED_CONTEXT();
    if (handle == NULL) return E_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int i = find(K_LEGACY, pointer);
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    ipc_payload payload = { IPC_MAGIC, 1, (int) getpid(), 0, entries[i].size, { 0 } };
    snprintf(payload.name, sizeof(payload.name), "%s", entries[i].name);
    pthread_mutex_unlock(&lock);
    memset(handle, 0, sizeof(*handle));
    memcpy(handle, &payload, sizeof(payload));
    return OK;
}

API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pointer, CUipcMemHandle handle, unsigned int flags)
{
    NEED_CONTEXT();
    if (pointer == NULL || flags != 1) return E_INVALID_VALUE;
    ipc_payload payload;
    memcpy(&payload, &handle, sizeof(payload));
    payload.name[sizeof(payload.name) - 1] = 0;
    if (payload.magic != (int) IPC_MAGIC || payload.version != 1 || strncmp(payload.name, "/kvbfake-", 9) != 0) return E_INVALID_VALUE;
    /* the real driver refuses to open a handle in the process that made it */
    if (payload.pid == (int) getpid()) return E_INVALID_CONTEXT;
    if (take_one(&fail_opens)) return E_MAP_FAILED;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_ENTRIES; i++) {
        if (entries[i].kind == K_IPC_OPEN && strcmp(entries[i].name, payload.name) == 0) {
            entries[i].refs++;
            *pointer = entries[i].base;
            pthread_mutex_unlock(&lock);
            return OK;
        }
    }
    int fd = shm_open(payload.name, O_RDWR | O_CLOEXEC, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t) st.st_size != payload.size) {
        if (fd >= 0) close(fd);
        pthread_mutex_unlock(&lock);
        return E_INVALID_HANDLE;
    }
    void *mapped = mmap(NULL, payload.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    int i = mapped == MAP_FAILED ? -1 : take_entry();
    if (i < 0) {
        if (mapped != MAP_FAILED) munmap(mapped, payload.size);
        pthread_mutex_unlock(&lock);
        return E_MAP_FAILED;
    }
    entries[i].kind = K_IPC_OPEN;
    entries[i].base = (uint64_t) mapped;
    entries[i].size = payload.size;
    entries[i].device = current_device;
    entries[i].refs = 1;
    snprintf(entries[i].name, sizeof(entries[i].name), "%s", payload.name);
    pthread_mutex_unlock(&lock);
    *pointer = (CUdeviceptr) mapped;
    return OK;
}

API CUresult cuIpcCloseMemHandle(CUdeviceptr pointer)
{
    NEED_CONTEXT();
    pthread_mutex_lock(&lock);
    int i = find(K_IPC_OPEN, pointer);
    if (i < 0 || entries[i].base != pointer) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    if (--entries[i].refs == 0) {
        munmap((void *) entries[i].base, entries[i].size);
        entries[i].kind = K_FREE;
    }
    pthread_mutex_unlock(&lock);
    return OK;
}

/* ------------------------------------------------------------------ VMM */

static int phys_of(CUmemGenericAllocationHandle handle)
{
    if ((handle & 0xFFFF000000000000ull) != HANDLE_TAG) return -1;
    uint64_t index = (handle & 0xFFFFFFFFull) - 1;
    return index < MAX_ENTRIES && entries[index].kind == K_PHYS ? (int) index : -1;
}

static void release_phys_if_unused(int i)
{
    if (entries[i].refs == 0 && entries[i].maps == 0) {
        close(entries[i].fd);
        entries[i].kind = K_FREE;
    }
}

API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop, int option)
{
    NEED_INIT();
    if (granularity == NULL || prop == NULL || prop->type != 1 || prop->location.type != 1 || (option != 0 && option != 1)) return E_INVALID_VALUE;
    *granularity = GRANULARITY;
    return OK;
}

API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags)
{
    NEED_CONTEXT();
    if (handle == NULL || prop == NULL || flags != 0 || size == 0 || size % GRANULARITY != 0) return E_INVALID_VALUE;
    if (prop->type != 1 || prop->location.type != 1 || prop->win32HandleMetaData != NULL || (prop->requestedHandleTypes & ~1) != 0) return E_INVALID_VALUE;
    if (prop->location.id < 0 || prop->location.id >= device_count) return E_INVALID_DEVICE;
    if (!atomic_load(&vmm_supported)) return E_NOT_SUPPORTED;
    if (take_one(&fail_allocs)) return E_OUT_OF_MEMORY;
    int fd = memfd_create("kvbfake-vmm", MFD_CLOEXEC);
    if (fd < 0) return E_OUT_OF_MEMORY;
    if (ftruncate(fd, (off_t) size) != 0) {
        close(fd);
        return E_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&lock);
    int i = take_entry();
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        close(fd);
        return E_OUT_OF_MEMORY;
    }
    entries[i].kind = K_PHYS;
    entries[i].size = size;
    entries[i].device = prop->location.id;
    entries[i].refs = 1;
    entries[i].fd = fd;
    entries[i].handleTypes = prop->requestedHandleTypes;
    pthread_mutex_unlock(&lock);
    *handle = HANDLE_TAG | (uint64_t) (i + 1);
    return OK;
}

API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    NEED_INIT();
    pthread_mutex_lock(&lock);
    int i = phys_of(handle);
    if (i < 0 || entries[i].refs == 0) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    entries[i].refs--;
    release_phys_if_unused(i);
    pthread_mutex_unlock(&lock);
    return OK;
}

API CUresult cuMemAddressReserve(CUdeviceptr *pointer, size_t size, size_t alignment, CUdeviceptr address, unsigned long long flags)
{
    NEED_INIT();
    if (pointer == NULL || size == 0 || size % GRANULARITY != 0 || flags != 0 || address != 0) return E_INVALID_VALUE;
    (void) alignment;
    void *reserved = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) return E_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    int i = take_entry();
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        munmap(reserved, size);
        return E_OUT_OF_MEMORY;
    }
    entries[i].kind = K_RESERVE;
    entries[i].base = (uint64_t) reserved;
    entries[i].size = size;
    pthread_mutex_unlock(&lock);
    *pointer = (CUdeviceptr) reserved;
    return OK;
}

API CUresult cuMemAddressFree(CUdeviceptr pointer, size_t size)
{
    NEED_INIT();
    pthread_mutex_lock(&lock);
    int i = find(K_RESERVE, pointer);
    int mapped = find(K_MAP, pointer);
    if (i < 0 || entries[i].base != pointer || entries[i].size != size || mapped >= 0) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    munmap((void *) pointer, size);
    entries[i].kind = K_FREE;
    pthread_mutex_unlock(&lock);
    return OK;
}

API CUresult cuMemMap(CUdeviceptr pointer, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    NEED_INIT();
    if (flags != 0 || size == 0) return E_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int p = phys_of(handle);
    int r = find(K_RESERVE, pointer);
    if (p < 0 || r < 0 || offset + size > entries[p].size || pointer + size > entries[r].base + entries[r].size || find(K_MAP, pointer) >= 0) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    void *mapped = mmap((void *) pointer, size, PROT_NONE, MAP_SHARED | MAP_FIXED, entries[p].fd, (off_t) offset);
    int i = mapped == MAP_FAILED ? -1 : take_entry();
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        return E_OUT_OF_MEMORY;
    }
    entries[i].kind = K_MAP;
    entries[i].base = pointer;
    entries[i].size = size;
    entries[i].device = entries[p].device;
    entries[i].phys = p;
    entries[p].maps++;
    pthread_mutex_unlock(&lock);
    return OK;
}

API CUresult cuMemSetAccess(CUdeviceptr pointer, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    NEED_INIT();
    if (desc == NULL || count != 1 || desc->location.type != 1 || desc->flags != 3) return E_INVALID_VALUE;
    if (desc->location.id < 0 || desc->location.id >= device_count) return E_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    int i = find(K_MAP, pointer);
    if (i < 0 || entries[i].base != pointer || entries[i].size != size || mprotect((void *) pointer, size, PROT_READ | PROT_WRITE) != 0) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    entries[i].access = 1;
    pthread_mutex_unlock(&lock);
    return OK;
}

API CUresult cuMemUnmap(CUdeviceptr pointer, size_t size)
{
    NEED_INIT();
    pthread_mutex_lock(&lock);
    int i = find(K_MAP, pointer);
    if (i < 0 || entries[i].base != pointer || entries[i].size != size) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    /* the range goes back to being reserved: inaccessible, still owned */
    mmap((void *) pointer, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    int p = entries[i].phys;
    entries[i].kind = K_FREE;
    entries[p].maps--;
    release_phys_if_unused(p);
    pthread_mutex_unlock(&lock);
    return OK;
}

API CUresult cuMemExportToShareableHandle(void *shareable, CUmemGenericAllocationHandle handle, int type, unsigned long long flags)
{
    NEED_INIT();
    if (shareable == NULL || flags != 0 || type != 1) return E_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int p = phys_of(handle);
    if (p < 0 || (entries[p].handleTypes & 1) == 0) {
        pthread_mutex_unlock(&lock);
        return p < 0 ? E_INVALID_VALUE : E_NOT_SUPPORTED;
    }
    int fd = fcntl(entries[p].fd, F_DUPFD_CLOEXEC, 0);
    pthread_mutex_unlock(&lock);
    if (fd < 0) return E_OUT_OF_MEMORY;
    *(int *) shareable = fd;
    return OK;
}

API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle, int type)
{
    NEED_INIT();
    if (handle == NULL || type != 1) return E_INVALID_VALUE;
    if (take_one(&fail_opens)) return E_MAP_FAILED;
    int fd = (int) (intptr_t) osHandle;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size % GRANULARITY != 0) return E_INVALID_HANDLE;
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return E_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    int i = take_entry();
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        close(own);
        return E_OUT_OF_MEMORY;
    }
    entries[i].kind = K_PHYS;
    entries[i].size = (uint64_t) st.st_size;
    entries[i].device = current_device < 0 ? 0 : current_device;
    entries[i].refs = 1;
    entries[i].fd = own;
    entries[i].imported = 1;
    entries[i].handleTypes = 1;
    pthread_mutex_unlock(&lock);
    *handle = HANDLE_TAG | (uint64_t) (i + 1);
    return OK;
}

API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *address)
{
    NEED_INIT();
    if (handle == NULL) return E_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int i = find(K_MAP, (uint64_t) address);
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    int p = entries[i].phys;
    entries[p].refs++;
    pthread_mutex_unlock(&lock);
    *handle = HANDLE_TAG | (uint64_t) (p + 1);
    return OK;
}

/* ------------------------------------------------------------------ host registration, pointer attributes */

API CUresult cuMemHostRegister_v2(void *pointer, size_t bytes, unsigned int flags)
{
    NEED_CONTEXT();
    if (pointer == NULL || bytes == 0 || (flags & ~0x0Fu) != 0) return E_INVALID_VALUE;
    uint64_t base = (uint64_t) pointer;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_ENTRIES; i++) {
        if (entries[i].kind == K_HOSTREG && base < entries[i].base + entries[i].size && entries[i].base < base + bytes) {
            pthread_mutex_unlock(&lock);
            return E_HOST_ALREADY_REGISTERED;
        }
    }
    int i = take_entry();
    if (i < 0) {
        pthread_mutex_unlock(&lock);
        return E_OUT_OF_MEMORY;
    }
    entries[i].kind = K_HOSTREG;
    entries[i].base = base;
    entries[i].size = bytes;
    entries[i].device = current_device;
    pthread_mutex_unlock(&lock);
    return OK;
}

API CUresult cuMemHostUnregister(void *pointer)
{
    NEED_CONTEXT();
    pthread_mutex_lock(&lock);
    int i = find(K_HOSTREG, (uint64_t) pointer);
    if (i < 0 || entries[i].base != (uint64_t) pointer) {
        pthread_mutex_unlock(&lock);
        return E_HOST_NOT_REGISTERED;
    }
    entries[i].kind = K_FREE;
    pthread_mutex_unlock(&lock);
    return OK;
}

API CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr pointer)
{
    NEED_CONTEXT();
    if (data == NULL) return E_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int i = find_device_range(pointer);
    int host = 0;
    if (i < 0) {
        i = find(K_HOSTREG, pointer);
        host = 1;
    }
    if (i < 0) {
        /* memory CUDA does not know: what the driver answers for plain host memory */
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    entry found = entries[i];
    pthread_mutex_unlock(&lock);
    switch (attribute) {
        case 2: *(unsigned int *) data = host ? 1u : 2u; break;    /* MEMORY_TYPE */
        case 9: *(int *) data = found.device; break;               /* DEVICE_ORDINAL */
        case 11: *(CUdeviceptr *) data = found.base; break;         /* RANGE_START_ADDR */
        case 12: *(size_t *) data = found.size; break;              /* RANGE_SIZE */
        default: return E_INVALID_VALUE;
    }
    return OK;
}

/* ------------------------------------------------------------------ streams and events */

typedef struct event {
    atomic_int state;   /* 0: never recorded, 1: pending, 2: reached */
    atomic_int error;
    atomic_ulong sequence;
} event;

typedef struct { int type; uint64_t dst, src, bytes; event *ev; unsigned long sequence; } op;

typedef struct stream {
    pthread_t thread;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    op *ops;
    size_t capacity, head, count;
    int stop;
    int error;          /* first copy error since the last event */
} stream;

/* a copy may touch a device range only where it is mapped with access; anything else is host memory */
static int copy_allowed(uint64_t address, uint64_t bytes)
{
    int result = 1;
    pthread_mutex_lock(&lock);
    int r = find(K_RESERVE, address);
    if (r >= 0) {
        int m = find(K_MAP, address);
        result = m >= 0 && entries[m].access && address + bytes <= entries[m].base + entries[m].size;
    }
    else {
        int d = find_device_range(address);
        result = d < 0 || address + bytes <= entries[d].base + entries[d].size;
    }
    pthread_mutex_unlock(&lock);
    return result;
}

static void *stream_worker(void *argument)
{
    stream *s = argument;
    for (;;) {
        pthread_mutex_lock(&s->mutex);
        while (s->count == 0 && !s->stop) pthread_cond_wait(&s->cond, &s->mutex);
        if (s->count == 0 && s->stop) {
            pthread_mutex_unlock(&s->mutex);
            return NULL;
        }
        op next = s->ops[s->head];
        s->head = (s->head + 1) % s->capacity;
        s->count--;
        /* an issuing call may wait for room (queue_limit) */
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->mutex);
        if (next.type == 0) {
            int delay = atomic_load(&copy_delay_us);
            if (delay > 0) usleep((useconds_t) delay);
            if (take_one(&fail_copies) || !copy_allowed(next.dst, next.bytes) || !copy_allowed(next.src, next.bytes)) {
                if (s->error == 0) s->error = E_ILLEGAL_ADDRESS;
            }
            else if (s->error == 0) {
                memmove((void *) next.dst, (const void *) next.src, next.bytes);
                atomic_fetch_add(&copies_done, 1);
            }
        }
        else if (atomic_load(&next.ev->sequence) == next.sequence) {
            atomic_store(&next.ev->error, s->error);
            s->error = 0;
            atomic_store(&next.ev->state, 2);
        }
        else {
            /* re-recorded since: the later record reports */
            s->error = 0;
        }
    }
}

/* queues n ops at once, in order, so that no other call's work lands between them */
static CUresult enqueue_many(stream *s, const op *items, size_t n)
{
    pthread_mutex_lock(&s->mutex);
    /* a real driver's asynchronous calls block while the device's work queue is full: with a hung device, for good */
    for (int limit = atomic_load(&queue_limit); limit > 0 && s->count > 0 && s->count + n > (size_t) limit; limit = atomic_load(&queue_limit)) {
        pthread_cond_wait(&s->cond, &s->mutex);
    }
    if (s->count + n > s->capacity) {
        size_t capacity = s->capacity;
        while (capacity < s->count + n) capacity *= 2;
        op *ops = malloc(capacity * sizeof(op));
        if (ops == NULL) {
            pthread_mutex_unlock(&s->mutex);
            return E_OUT_OF_MEMORY;
        }
        for (size_t k = 0; k < s->count; k++) ops[k] = s->ops[(s->head + k) % s->capacity];
        free(s->ops);
        s->ops = ops;
        s->head = 0;
        s->capacity = capacity;
    }
    for (size_t k = 0; k < n; k++) s->ops[(s->head + s->count + k) % s->capacity] = items[k];
    s->count += n;
    /* the worker and callers waiting for room share the condition */
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mutex);
    return OK;
}

static CUresult enqueue(stream *s, op item)
{
    return enqueue_many(s, &item, 1);
}

API CUresult cuStreamCreate(void **handle, unsigned int flags)
{
    NEED_CONTEXT();
    if (handle == NULL || flags > 1) return E_INVALID_VALUE;
    stream *s = calloc(1, sizeof(stream));
    if (s == NULL) return E_OUT_OF_MEMORY;
    s->capacity = 64;
    s->ops = malloc(s->capacity * sizeof(op));
    pthread_mutex_init(&s->mutex, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (s->ops == NULL || pthread_create(&s->thread, NULL, stream_worker, s) != 0) {
        free(s->ops);
        free(s);
        return E_OUT_OF_MEMORY;
    }
    *handle = s;
    return OK;
}

API CUresult cuStreamDestroy_v2(void *handle)
{
    NEED_CONTEXT();
    stream *s = handle;
    if (s == NULL) return E_INVALID_HANDLE;
    /* the real driver returns at once and finishes the queued work; the fake finishes it first */
    pthread_mutex_lock(&s->mutex);
    s->stop = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mutex);
    pthread_join(s->thread, NULL);
    free(s->ops);
    free(s);
    return OK;
}

API CUresult cuEventCreate(void **handle, unsigned int flags)
{
    NEED_CONTEXT();
    if (handle == NULL || (flags & ~0x7u) != 0) return E_INVALID_VALUE;
    event *e = calloc(1, sizeof(event));
    if (e == NULL) return E_OUT_OF_MEMORY;
    *handle = e;
    return OK;
}

API CUresult cuEventDestroy_v2(void *handle)
{
    NEED_CONTEXT();
    event *e = handle;
    if (e == NULL) return E_INVALID_HANDLE;
    /* a pending record still refers to it: the fake waits for it, briefly, rather than freeing under the worker */
    for (int i = 0; i < 10000 && atomic_load(&e->state) == 1; i++) usleep(100);
    if (atomic_load(&e->state) == 1) return E_NOT_READY;
    free(e);
    return OK;
}

API CUresult cuEventRecord(void *handle, void *stream_handle)
{
    NEED_CONTEXT();
    event *e = handle;
    stream *s = stream_handle;
    if (e == NULL || s == NULL) return E_INVALID_HANDLE;
    unsigned long sequence = atomic_fetch_add(&e->sequence, 1) + 1;
    atomic_store(&e->state, 1);
    op item = { 1, 0, 0, 0, e, sequence };
    return enqueue(s, item);
}

API CUresult cuEventQuery(void *handle)
{
    NEED_CONTEXT();
    event *e = handle;
    if (e == NULL) return E_INVALID_HANDLE;
    int state = atomic_load(&e->state);
    if (state == 1) return E_NOT_READY;
    return state == 2 ? atomic_load(&e->error) : OK;
}

API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream_handle)
{
    NEED_CONTEXT();
    stream *s = stream_handle;
    if (s == NULL) return E_INVALID_HANDLE;
    if (dst == 0 || src == 0) return E_INVALID_VALUE;
    atomic_fetch_add(&copy_calls, 1);
    op item = { 0, dst, src, bytes, NULL, 0 };
    return enqueue(s, item);
}

/* ------------------------------------------------------------------ batch copies */

#define NO_COPY ((size_t) -1)

/*
 * cuMemcpyBatchAsync as the header documents it: every argument checked before anything is queued
 * (count > 0, no null array, 1 <= numAttrs <= count, attrsIdxs starting at 0 and increasing below
 * count, a valid srcAccessOrder per attribute, the legacy NULL stream refused), then the copies run
 * on the stream's worker like single copies, so injected copy failures apply to them. The driver runs
 * them in no particular order; the fake runs them in order. CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL
 * (sources read before the call returns) is not implemented and answered CUDA_ERROR_NOT_SUPPORTED.
 * failIdx (the CUDA 12.8 ABI only) names the refused copy, or is SIZE_MAX for an error of no copy.
 */
static CUresult memcpy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                             size_t numAttrs, size_t *failIdx, void *stream_handle)
{
    if (failIdx != NULL) *failIdx = NO_COPY;
    NEED_CONTEXT();
    stream *s = stream_handle;
    if (s == NULL || dsts == NULL || srcs == NULL || sizes == NULL || attrs == NULL || attrsIdxs == NULL) return E_INVALID_VALUE;
    if (count == 0 || numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0) return E_INVALID_VALUE;
    for (size_t k = 0; k < numAttrs; k++) {
        if (k > 0 && attrsIdxs[k] <= attrsIdxs[k - 1]) return E_INVALID_VALUE;
        if (attrsIdxs[k] >= count) return E_INVALID_VALUE;
        int order = attrs[k].srcAccessOrder;
        if (order < 1 || order > 3 || (attrs[k].flags & ~1u) != 0) return E_INVALID_VALUE;
        if (attrs[k].srcLocHint.type < 0 || attrs[k].srcLocHint.type > 4 || attrs[k].dstLocHint.type < 0 || attrs[k].dstLocHint.type > 4) {
            return E_INVALID_VALUE;
        }
        if (order == 2) return E_NOT_SUPPORTED;
    }
    if (take_one(&fail_batches)) {
        /* an injected refusal, as the driver refuses a copy it cannot queue: nothing is queued */
        if (failIdx != NULL) *failIdx = count - 1;
        return E_INVALID_VALUE;
    }
    op *items = malloc(count * sizeof(op));
    if (items == NULL) return E_OUT_OF_MEMORY;
    for (size_t i = 0; i < count; i++) {
        if (dsts[i] == 0 || srcs[i] == 0) {
            free(items);
            if (failIdx != NULL) *failIdx = i;
            return E_INVALID_VALUE;
        }
        op item = { 0, dsts[i], srcs[i], sizes[i], NULL, 0 };
        items[i] = item;
    }
    CUresult rc = enqueue_many(s, items, count);
    free(items);
    if (rc == OK) {
        atomic_fetch_add(&batch_calls, 1);
        atomic_fetch_add(&batch_copies, (long) count);
    }
    return rc;
}

/* CUDA 12.8 and 12.9 */
API CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                size_t numAttrs, size_t *failIdx, void *stream_handle)
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, stream_handle);
}

/* CUDA 13.0: no failIdx */
API CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                   size_t numAttrs, void *stream_handle)
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, stream_handle);
}

/*
 * The versioned entry point for a base name and CUDA version, as the driver answers it: a version
 * above the driver's is CUDA_ERROR_INVALID_VALUE; an unknown symbol, or one newer than the version
 * asked for, is CUDA_SUCCESS with a NULL pointer and the status saying which. The fake answers only
 * for cuMemcpyBatchAsync (steered off with batch_supported=0, as a driver without it answers).
 */
API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags, int *symbolStatus)
{
    if (symbol == NULL || pfn == NULL || (flags & ~3ull) != 0 || cudaVersion <= 0 || cudaVersion > driver_version) return E_INVALID_VALUE;
    *pfn = NULL;
    int status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    if (strcmp(symbol, "cuMemcpyBatchAsync") == 0 && atomic_load(&batch_supported) && driver_version >= 12080) {
        if (cudaVersion >= 13000) {
            *pfn = (void *) cuMemcpyBatchAsync_v2;
            status = 0;
        }
        else if (cudaVersion >= 12080) {
            *pfn = (void *) cuMemcpyBatchAsync;
            status = 0;
        }
        else {
            status = 2; /* CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT */
        }
    }
    if (symbolStatus != NULL) *symbolStatus = status;
    return OK;
}

/* ------------------------------------------------------------------ test steering (fake only) */

/*
 * Keys: no_device (cuInit answers CUDA_ERROR_NO_DEVICE), driver_version, ipc_supported, vmm_supported,
 * fail_copies (the next N copies fail: the event after them reports CUDA_ERROR_ILLEGAL_ADDRESS),
 * fail_opens (the next N IPC opens or imports fail with CUDA_ERROR_MAP_FAILED), fail_allocs (the next
 * N allocations fail with CUDA_ERROR_OUT_OF_MEMORY), copy_delay_us (each copy first sleeps),
 * batch_supported (0: cuGetProcAddress finds no cuMemcpyBatchAsync, as on a driver older than 12.8), fail_batches
 * (the next N valid batch calls are refused with CUDA_ERROR_INVALID_VALUE, failIdx naming their last copy),
 * queue_limit (a stream holding that many queued operations makes the next asynchronous call wait for room,
 * as a real driver's launch queue does; 0: unbounded), reset (any value: every key above back to its value at load, so a test cannot leave one behind).
 * Returns 0, or -1 for an unknown key.
 */
API int kvbfake_control(const char *key, long long value)
{
    if (key == NULL) return -1;
    if (strcmp(key, "reset") == 0) {
        atomic_store(&no_device, 0);
        driver_version = 13000;
        atomic_store(&ipc_supported, 1);
        atomic_store(&vmm_supported, 1);
        atomic_store(&fail_copies, 0);
        atomic_store(&fail_opens, 0);
        atomic_store(&fail_allocs, 0);
        atomic_store(&copy_delay_us, 0);
        atomic_store(&batch_supported, 1);
        atomic_store(&fail_batches, 0);
        atomic_store(&queue_limit, 0);
    }
    else if (strcmp(key, "no_device") == 0) atomic_store(&no_device, (int) value);
    else if (strcmp(key, "driver_version") == 0) driver_version = (int) value;
    else if (strcmp(key, "ipc_supported") == 0) atomic_store(&ipc_supported, (int) value);
    else if (strcmp(key, "vmm_supported") == 0) atomic_store(&vmm_supported, (int) value);
    else if (strcmp(key, "fail_copies") == 0) atomic_store(&fail_copies, (int) value);
    else if (strcmp(key, "fail_opens") == 0) atomic_store(&fail_opens, (int) value);
    else if (strcmp(key, "fail_allocs") == 0) atomic_store(&fail_allocs, (int) value);
    else if (strcmp(key, "copy_delay_us") == 0) atomic_store(&copy_delay_us, (int) value);
    else if (strcmp(key, "batch_supported") == 0) atomic_store(&batch_supported, (int) value);
    else if (strcmp(key, "fail_batches") == 0) atomic_store(&fail_batches, (int) value);
    else if (strcmp(key, "queue_limit") == 0) atomic_store(&queue_limit, (int) value);
    else return -1;
    return 0;
}

/*
 * Counters: peer_handles (opened IPC handles plus imported VMM allocations still held), device_allocations
 * (cuMemAlloc and cuMemCreate allocations alive), mappings, reservations, host_registrations,
 * copies (copies that moved bytes), copy_calls (cuMemcpyAsync calls), batch_calls (cuMemcpyBatchAsync calls that
 * queued their copies), batch_copies (copies those calls queued). Returns -1 for an unknown key.
 */
API long long kvbfake_stat(const char *key)
{
    if (key == NULL) return -1;
    if (strcmp(key, "copies") == 0) return atomic_load(&copies_done);
    if (strcmp(key, "copy_calls") == 0) return atomic_load(&copy_calls);
    if (strcmp(key, "batch_calls") == 0) return atomic_load(&batch_calls);
    if (strcmp(key, "batch_copies") == 0) return atomic_load(&batch_copies);
    long long count = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_ENTRIES; i++) {
        const entry *e = &entries[i];
        if (strcmp(key, "peer_handles") == 0) count += e->kind == K_IPC_OPEN || (e->kind == K_PHYS && e->imported);
        else if (strcmp(key, "device_allocations") == 0) count += e->kind == K_LEGACY || (e->kind == K_PHYS && !e->imported);
        else if (strcmp(key, "mappings") == 0) count += e->kind == K_MAP;
        else if (strcmp(key, "reservations") == 0) count += e->kind == K_RESERVE;
        else if (strcmp(key, "host_registrations") == 0) count += e->kind == K_HOSTREG;
        else {
            count = -1;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return count;
}
