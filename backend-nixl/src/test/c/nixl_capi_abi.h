/*
 * The NIXL C API (libnixl_capi.so) as kvbridge binds it: our own declarations of the names, types
 * and values the ABI fixes (x86-64 Linux, SysV). Only the functional fake includes this header; the
 * Java binding states the same facts in its FunctionDescriptors.
 */
#ifndef KVBRIDGE_NIXL_CAPI_ABI_H
#define KVBRIDGE_NIXL_CAPI_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum
{
    NIXL_CAPI_SUCCESS = 0,
    NIXL_CAPI_IN_PROG = 1,
    NIXL_CAPI_ERROR_INVALID_PARAM = -1,
    NIXL_CAPI_ERROR_BACKEND = -2,
    NIXL_CAPI_ERROR_INVALID_STATE = -3,
    NIXL_CAPI_ERROR_EXCEPTION = -4,
    NIXL_CAPI_ERROR_NO_TELEMETRY = -5,
    NIXL_CAPI_ERROR_NOT_FOUND = -6
} nixl_capi_status_t;

typedef enum
{
    NIXL_CAPI_MEM_DRAM = 0,
    NIXL_CAPI_MEM_VRAM = 1,
    NIXL_CAPI_MEM_BLOCK = 2,
    NIXL_CAPI_MEM_OBJECT = 3,
    NIXL_CAPI_MEM_FILE = 4,
    NIXL_CAPI_MEM_UNKNOWN = 5
} nixl_capi_mem_type_t;

typedef enum
{
    NIXL_CAPI_THREAD_SYNC_NONE = 0,
    NIXL_CAPI_THREAD_SYNC_STRICT = 1,
    NIXL_CAPI_THREAD_SYNC_RW = 2
} nixl_capi_thread_sync_t;

typedef enum
{
    NIXL_CAPI_XFER_OP_READ = 0,
    NIXL_CAPI_XFER_OP_WRITE = 1
} nixl_capi_xfer_op_t;

typedef enum
{
    NIXL_CAPI_COST_ANALYTICAL_BACKEND = 0
} nixl_capi_cost_t;

/* 40 bytes, align 8: offsets 0, 1, 4, 8, 12, 16, 24, 32 */
typedef struct nixl_capi_agent_config_s
{
    bool enable_prog_thread;
    bool enable_listen_thread;
    int listen_port;
    nixl_capi_thread_sync_t thread_sync;
    unsigned int num_workers;
    uint64_t pthr_delay_us;
    uint64_t lthr_delay_us;
    bool capture_telemetry;
} nixl_capi_agent_config_t;

struct nixl_capi_xfer_telemetry_s
{
    uint64_t start_time_us;
    uint64_t post_duration_us;
    uint64_t xfer_duration_us;
    uint64_t total_bytes;
    uint64_t desc_count;
};

typedef struct nixl_capi_agent_s *nixl_capi_agent_t;
typedef struct nixl_capi_params_s *nixl_capi_params_t;
typedef struct nixl_capi_mem_list_s *nixl_capi_mem_list_t;
typedef struct nixl_capi_string_list_s *nixl_capi_string_list_t;
typedef struct nixl_capi_backend_s *nixl_capi_backend_t;
typedef struct nixl_capi_opt_args_s *nixl_capi_opt_args_t;
typedef struct nixl_capi_param_iter_s *nixl_capi_param_iter_t;
typedef struct nixl_capi_xfer_dlist_s *nixl_capi_xfer_dlist_t;
typedef struct nixl_capi_xfer_dlist_handle_s *nixl_capi_xfer_dlist_handle_t;
typedef struct nixl_capi_reg_dlist_s *nixl_capi_reg_dlist_t;
typedef struct nixl_capi_xfer_req_s *nixl_capi_xfer_req_t;
typedef struct nixl_capi_notif_map_s *nixl_capi_notif_map_t;
typedef struct nixl_capi_query_resp_list_s *nixl_capi_query_resp_list_t;
typedef struct nixl_capi_remote_dlist_s *nixl_capi_remote_dlist_t;
typedef struct nixl_capi_mem_view_s *nixl_capi_mem_view_t;
typedef struct nixl_capi_xfer_telemetry_s *nixl_capi_xfer_telemetry_t;

/* Counters of the fake (not part of NIXL), read by tests after tear-down. */
struct nixl_fake_stats
{
    uint64_t live_agents;
    uint64_t live_requests;
    uint64_t live_prepared;
    uint64_t live_objects;
    uint64_t bad_handles;
    uint64_t notifications_sent;
    uint64_t transfers_posted;
    uint64_t frames_sent;
};

#endif
