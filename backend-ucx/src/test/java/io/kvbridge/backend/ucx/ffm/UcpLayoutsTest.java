package io.kvbridge.backend.ucx.ffm;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.StructLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The hand-written layouts match UCX 1.13.1 on x86-64. Expected sizes and offsets are what
 * {@code sizeof}/{@code offsetof} printed in a C program compiled against the installed
 * {@code ucp.h} (the same numbers the layouts were derived from, kept here as the reference).
 */
@Timeout(30)
final class UcpLayoutsTest
{
    @Test
    void paramsMatchesC()
    {
        check(UcpLayouts.PARAMS, 80, "field_mask", 0, "features", 8, "request_size", 16, "request_init", 24, "request_cleanup", 32,
                "tag_sender_mask", 40, "mt_workers_shared", 48, "estimated_num_eps", 56, "estimated_num_ppn", 64, "name", 72);
    }

    @Test
    void workerParamsMatchesC()
    {
        check(UcpLayouts.WORKER_PARAMS, 200, "field_mask", 0, "thread_mode", 8, "cpu_mask", 16, "events", 144, "user_data", 152,
                "event_fd", 160, "flags", 168, "name", 176, "am_alignment", 184, "client_id", 192);
    }

    @Test
    void endpointParamsMatchesC()
    {
        check(UcpLayouts.EP_PARAMS, 104, "field_mask", 0, "address", 8, "err_mode", 16, "err_handler", 24, "user_data", 40, "flags", 48,
                "sockaddr", 56, "conn_request", 72, "name", 80, "local_sockaddr", 88);
        check(UcpLayouts.ERR_HANDLER, 16, "cb", 0, "arg", 8);
        assertEquals(24, UcpLayouts.EP_PARAMS_ERR_HANDLER_CB);
        assertEquals(32, UcpLayouts.EP_PARAMS_ERR_HANDLER_ARG);
    }

    @Test
    void memoryStructsMatchC()
    {
        check(UcpLayouts.MEM_MAP_PARAMS, 40, "field_mask", 0, "address", 8, "length", 16, "flags", 24, "prot", 28, "memory_type", 32);
        check(UcpLayouts.MEM_ATTR, 32, "field_mask", 0, "address", 8, "length", 16, "mem_type", 24);
    }

    @Test
    void requestAndTagStructsMatchC()
    {
        check(UcpLayouts.REQUEST_PARAM, 72, "op_attr_mask", 0, "flags", 4, "request", 8, "cb", 16, "datatype", 24, "user_data", 32,
                "reply_buffer", 40, "memory_type", 48, "recv_info", 56, "memh", 64);
        check(UcpLayouts.TAG_RECV_INFO, 16, "sender_tag", 0, "length", 8);
    }

    @Test
    void activeMessageStructsMatchC()
    {
        check(UcpLayouts.AM_HANDLER_PARAM, 32, "field_mask", 0, "id", 8, "flags", 12, "cb", 16, "arg", 24);
        check(UcpLayouts.AM_RECV_PARAM, 16, "recv_attr", 0, "reply_ep", 8);
    }

    @Test
    void contextAttributesMatchC()
    {
        check(UcpLayouts.CONTEXT_ATTR, 64, "field_mask", 0, "request_size", 8, "thread_mode", 16, "memory_types", 24, "name", 32);
    }

    @Test
    void statusPointersDecodeLikeTheCMacros()
    {
        assertEquals(false, UcpStatus.isError(0));
        assertEquals(false, UcpStatus.isError(0x7f00_1234_5678L));
        // UCS_STATUS_PTR(UCS_ERR_CONNECTION_RESET) is (void *)(intptr_t)-25
        assertEquals(true, UcpStatus.isError(-25L));
        assertEquals(UcpStatus.ERR_CONNECTION_RESET, UcpStatus.statusOf(-25L));
        assertEquals(true, UcpStatus.isError(-100L));
        assertEquals(false, UcpStatus.isError(-101L));
    }

    private static void check(StructLayout layout, long size, Object... fieldsAndOffsets)
    {
        assertEquals(size, layout.byteSize(), () -> layout + " size");
        for (int i = 0; i < fieldsAndOffsets.length; i += 2) {
            String field = (String) fieldsAndOffsets[i];
            assertEquals(((Integer) fieldsAndOffsets[i + 1]).longValue(), layout.byteOffset(groupElement(field)), () -> layout + " offset of " + field);
        }
    }
}
