package io.kvbridge.backend.ucx.ffm;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.MemoryLayout.paddingLayout;
import static java.lang.foreign.MemoryLayout.sequenceLayout;
import static java.lang.foreign.MemoryLayout.structLayout;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.StructLayout;

/**
 * The UCX 1.13 structures kvbridge fills, laid out by hand for 64-bit Linux (x86-64, aarch64).
 * Every C padding hole is an explicit {@code paddingLayout}, so a field that moves shows up as a
 * size or offset mismatch in the layout test, which compares these with {@code offsetof} values
 * printed by a C program compiled against the UCX 1.13.1 headers.
 */
final class UcpLayouts
{
    /** {@code ucp_params_t}, 80 bytes. */
    static final StructLayout PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_LONG.withName("features"),
            JAVA_LONG.withName("request_size"),
            ADDRESS.withName("request_init"),
            ADDRESS.withName("request_cleanup"),
            JAVA_LONG.withName("tag_sender_mask"),
            JAVA_INT.withName("mt_workers_shared"),
            paddingLayout(4),
            JAVA_LONG.withName("estimated_num_eps"),
            JAVA_LONG.withName("estimated_num_ppn"),
            ADDRESS.withName("name"));

    /** {@code ucp_worker_params_t}, 200 bytes; {@code cpu_mask} is a 1024-bit {@code ucs_cpu_set_t}. */
    static final StructLayout WORKER_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_INT.withName("thread_mode"),
            paddingLayout(4),
            sequenceLayout(16, JAVA_LONG).withName("cpu_mask"),
            JAVA_INT.withName("events"),
            paddingLayout(4),
            ADDRESS.withName("user_data"),
            JAVA_INT.withName("event_fd"),
            paddingLayout(4),
            JAVA_LONG.withName("flags"),
            ADDRESS.withName("name"),
            JAVA_LONG.withName("am_alignment"),
            JAVA_LONG.withName("client_id"));

    /** {@code ucp_err_handler_t}, 16 bytes. */
    static final StructLayout ERR_HANDLER = structLayout(
            ADDRESS.withName("cb"),
            ADDRESS.withName("arg"));

    /** {@code ucs_sock_addr_t}, 16 bytes. */
    static final StructLayout SOCK_ADDR = structLayout(
            ADDRESS.withName("addr"),
            JAVA_INT.withName("addrlen"),
            paddingLayout(4));

    /** {@code ucp_ep_params_t}, 104 bytes. */
    static final StructLayout EP_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_INT.withName("err_mode"),
            paddingLayout(4),
            ERR_HANDLER.withName("err_handler"),
            ADDRESS.withName("user_data"),
            JAVA_INT.withName("flags"),
            paddingLayout(4),
            SOCK_ADDR.withName("sockaddr"),
            ADDRESS.withName("conn_request"),
            ADDRESS.withName("name"),
            SOCK_ADDR.withName("local_sockaddr"));

    /** {@code ucp_mem_map_params_t}, 40 bytes. */
    static final StructLayout MEM_MAP_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("flags"),
            JAVA_INT.withName("prot"),
            JAVA_INT.withName("memory_type"),
            paddingLayout(4));

    /** {@code ucp_mem_attr_t}, 32 bytes. */
    static final StructLayout MEM_ATTR = structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("mem_type"),
            paddingLayout(4));

    /** {@code ucp_request_param_t}, 72 bytes; {@code cb} and {@code recv_info} are unions of pointers. */
    static final StructLayout REQUEST_PARAM = structLayout(
            JAVA_INT.withName("op_attr_mask"),
            JAVA_INT.withName("flags"),
            ADDRESS.withName("request"),
            ADDRESS.withName("cb"),
            JAVA_LONG.withName("datatype"),
            ADDRESS.withName("user_data"),
            ADDRESS.withName("reply_buffer"),
            JAVA_INT.withName("memory_type"),
            paddingLayout(4),
            ADDRESS.withName("recv_info"),
            ADDRESS.withName("memh"));

    /** {@code ucp_tag_recv_info_t}, 16 bytes. */
    static final StructLayout TAG_RECV_INFO = structLayout(
            JAVA_LONG.withName("sender_tag"),
            JAVA_LONG.withName("length"));

    /** {@code ucp_am_handler_param_t}, 32 bytes. */
    static final StructLayout AM_HANDLER_PARAM = structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_INT.withName("id"),
            JAVA_INT.withName("flags"),
            ADDRESS.withName("cb"),
            ADDRESS.withName("arg"));

    /** {@code ucp_am_recv_param_t}, 16 bytes. */
    static final StructLayout AM_RECV_PARAM = structLayout(
            JAVA_LONG.withName("recv_attr"),
            ADDRESS.withName("reply_ep"));

    /** {@code ucp_context_attr_t}, 64 bytes; {@code name} is {@code char[UCP_ENTITY_NAME_MAX]}. */
    static final StructLayout CONTEXT_ATTR = structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_LONG.withName("request_size"),
            JAVA_INT.withName("thread_mode"),
            paddingLayout(4),
            JAVA_LONG.withName("memory_types"),
            sequenceLayout(32, JAVA_BYTE).withName("name"));

    // offsets used by the bindings, computed once from the layouts above
    static final long PARAMS_FIELD_MASK = offset(PARAMS, "field_mask");
    static final long PARAMS_FEATURES = offset(PARAMS, "features");
    static final long PARAMS_NAME = offset(PARAMS, "name");
    static final long WORKER_PARAMS_FIELD_MASK = offset(WORKER_PARAMS, "field_mask");
    static final long WORKER_PARAMS_THREAD_MODE = offset(WORKER_PARAMS, "thread_mode");
    static final long WORKER_PARAMS_NAME = offset(WORKER_PARAMS, "name");
    static final long EP_PARAMS_FIELD_MASK = offset(EP_PARAMS, "field_mask");
    static final long EP_PARAMS_ADDRESS = offset(EP_PARAMS, "address");
    static final long EP_PARAMS_ERR_MODE = offset(EP_PARAMS, "err_mode");
    static final long EP_PARAMS_ERR_HANDLER_CB = EP_PARAMS.byteOffset(groupElement("err_handler"), groupElement("cb"));
    static final long EP_PARAMS_ERR_HANDLER_ARG = EP_PARAMS.byteOffset(groupElement("err_handler"), groupElement("arg"));
    static final long MEM_MAP_FIELD_MASK = offset(MEM_MAP_PARAMS, "field_mask");
    static final long MEM_MAP_ADDRESS = offset(MEM_MAP_PARAMS, "address");
    static final long MEM_MAP_LENGTH = offset(MEM_MAP_PARAMS, "length");
    static final long MEM_MAP_FLAGS = offset(MEM_MAP_PARAMS, "flags");
    static final long MEM_ATTR_FIELD_MASK = offset(MEM_ATTR, "field_mask");
    static final long MEM_ATTR_ADDRESS = offset(MEM_ATTR, "address");
    static final long REQUEST_PARAM_OP_ATTR_MASK = offset(REQUEST_PARAM, "op_attr_mask");
    static final long REQUEST_PARAM_FLAGS = offset(REQUEST_PARAM, "flags");
    static final long REQUEST_PARAM_MEMH = offset(REQUEST_PARAM, "memh");
    static final long TAG_RECV_INFO_SENDER_TAG = offset(TAG_RECV_INFO, "sender_tag");
    static final long TAG_RECV_INFO_LENGTH = offset(TAG_RECV_INFO, "length");
    static final long AM_HANDLER_PARAM_FIELD_MASK = offset(AM_HANDLER_PARAM, "field_mask");
    static final long AM_HANDLER_PARAM_ID = offset(AM_HANDLER_PARAM, "id");
    static final long AM_HANDLER_PARAM_FLAGS = offset(AM_HANDLER_PARAM, "flags");
    static final long AM_HANDLER_PARAM_CB = offset(AM_HANDLER_PARAM, "cb");
    static final long AM_HANDLER_PARAM_ARG = offset(AM_HANDLER_PARAM, "arg");
    static final long AM_RECV_PARAM_RECV_ATTR = offset(AM_RECV_PARAM, "recv_attr");
    static final long AM_RECV_PARAM_REPLY_EP = offset(AM_RECV_PARAM, "reply_ep");
    static final long CONTEXT_ATTR_FIELD_MASK = offset(CONTEXT_ATTR, "field_mask");
    static final long CONTEXT_ATTR_MEMORY_TYPES = offset(CONTEXT_ATTR, "memory_types");

    private UcpLayouts()
    {
    }

    static long offset(StructLayout layout, String field)
    {
        return layout.byteOffset(groupElement(field));
    }
}
