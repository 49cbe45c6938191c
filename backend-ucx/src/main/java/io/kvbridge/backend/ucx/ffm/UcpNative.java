package io.kvbridge.backend.ucx.ffm;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvbridge.transport.NativeLibrary;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * One method handle per C function kvbridge calls, bound once when this class initialises through
 * {@link NativeLibrary.Binder}s, so a too-old UCX is named with every symbol it lacks at once.
 * Initialisation fails with an {@link UnsatisfiedLinkError} naming the library or symbols that are
 * missing; {@link UcxAvailability} turns that into advice for the user.
 *
 * <p>Pointers travel as {@code JAVA_LONG}: on the 64-bit Linux ABIs this module supports (checked
 * by {@link UcxAvailability}) a pointer argument or result is passed exactly like a 64-bit
 * integer, and a {@code long} needs no {@code MemorySegment} wrapper, so issuing a put builds no
 * object. {@code ucs_status_t} is a packed one-byte enum in UCX and is always {@code JAVA_BYTE}.
 */
final class UcpNative
{
    /** The transport name the library properties derive from: {@code -Dkvbridge.ucx.library}. */
    static final String TRANSPORT = "ucx";
    static final String UCS_SONAME = "libucs.so.0";
    static final String UCP_SONAME = "libucp.so.0";
    private static final String REQUIREMENT = "UCX 1.13 or newer";

    private static final ValueLayout POINTER = JAVA_LONG;
    private static final ValueLayout STATUS = JAVA_BYTE;
    private static final ValueLayout SIZE = JAVA_LONG;

    static final boolean SIGNALS_LEFT_TO_JVM = disableUcxSignalHandlers();
    // libucs first: libucp needs it, and it must be the one kvbridge configured
    private static final NativeLibrary.Binder UCS = new NativeLibrary.Binder(UCS_SONAME, NativeLibrary.load(TRANSPORT, UCS_SONAME), REQUIREMENT);
    private static final NativeLibrary.Binder UCP = new NativeLibrary.Binder(UCP_SONAME, NativeLibrary.load(TRANSPORT, UCP_SONAME), REQUIREMENT);

    static final MethodHandle UCS_STATUS_STRING = UCS.bind("ucs_status_string", FunctionDescriptor.of(POINTER, STATUS));

    static final MethodHandle UCP_GET_VERSION = UCP.bind("ucp_get_version", FunctionDescriptor.ofVoid(POINTER, POINTER, POINTER));
    static final MethodHandle UCP_CONFIG_READ = UCP.bind("ucp_config_read", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_CONFIG_MODIFY = UCP.bind("ucp_config_modify", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_CONFIG_RELEASE = UCP.bind("ucp_config_release", FunctionDescriptor.ofVoid(POINTER));
    // ucp_init() is a static inline in ucp.h around this exported symbol
    static final MethodHandle UCP_INIT_VERSION = UCP.bind("ucp_init_version", FunctionDescriptor.of(STATUS, JAVA_INT, JAVA_INT, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_CLEANUP = UCP.bind("ucp_cleanup", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle UCP_CONTEXT_QUERY = UCP.bind("ucp_context_query", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    static final MethodHandle UCP_CONTEXT_PRINT_INFO = UCP.bind("ucp_context_print_info", FunctionDescriptor.ofVoid(POINTER, POINTER));

    static final MethodHandle UCP_WORKER_CREATE = UCP.bind("ucp_worker_create", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_WORKER_DESTROY = UCP.bind("ucp_worker_destroy", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle UCP_WORKER_GET_ADDRESS = UCP.bind("ucp_worker_get_address", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_WORKER_RELEASE_ADDRESS = UCP.bind("ucp_worker_release_address", FunctionDescriptor.ofVoid(POINTER, POINTER));
    // not a critical downcall: progress runs the endpoint error handler, a Java upcall
    static final MethodHandle UCP_WORKER_PROGRESS = UCP.bind("ucp_worker_progress", FunctionDescriptor.of(JAVA_INT, POINTER));
    static final MethodHandle UCP_WORKER_GET_EFD = UCP.bind("ucp_worker_get_efd", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    static final MethodHandle UCP_WORKER_ARM = UCP.bind("ucp_worker_arm", FunctionDescriptor.of(STATUS, POINTER));
    static final MethodHandle UCP_WORKER_FLUSH_NBX = UCP.bind("ucp_worker_flush_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER));

    static final MethodHandle UCP_EP_CREATE = UCP.bind("ucp_ep_create", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_EP_CLOSE_NBX = UCP.bind("ucp_ep_close_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER));
    static final MethodHandle UCP_EP_FLUSH_NBX = UCP.bind("ucp_ep_flush_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER));

    static final MethodHandle UCP_MEM_MAP = UCP.bind("ucp_mem_map", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_MEM_UNMAP = UCP.bind("ucp_mem_unmap", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    static final MethodHandle UCP_MEM_QUERY = UCP.bind("ucp_mem_query", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    static final MethodHandle UCP_RKEY_PACK = UCP.bind("ucp_rkey_pack", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_RKEY_BUFFER_RELEASE = UCP.bind("ucp_rkey_buffer_release", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle UCP_EP_RKEY_UNPACK = UCP.bind("ucp_ep_rkey_unpack", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_RKEY_DESTROY = UCP.bind("ucp_rkey_destroy", FunctionDescriptor.ofVoid(POINTER));

    // (ep, buffer, count, remote_addr, rkey, param) -> ucs_status_ptr_t
    static final MethodHandle UCP_PUT_NBX = UCP.bind("ucp_put_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, SIZE, JAVA_LONG, POINTER, POINTER));
    static final MethodHandle UCP_GET_NBX = UCP.bind("ucp_get_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, SIZE, JAVA_LONG, POINTER, POINTER));
    // (ep, buffer, count, tag, param) -> ucs_status_ptr_t
    static final MethodHandle UCP_TAG_SEND_NBX = UCP.bind("ucp_tag_send_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, SIZE, JAVA_LONG, POINTER));
    // (worker, tag, tag_mask, remove, info) -> ucp_tag_message_h
    static final MethodHandle UCP_TAG_PROBE_NB = UCP.bind("ucp_tag_probe_nb", FunctionDescriptor.of(POINTER, POINTER, JAVA_LONG, JAVA_LONG, JAVA_INT, POINTER));
    // (worker, buffer, count, message, param) -> ucs_status_ptr_t
    static final MethodHandle UCP_TAG_MSG_RECV_NBX = UCP.bind("ucp_tag_msg_recv_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, SIZE, POINTER, POINTER));
    // (worker, ucp_am_handler_param_t*) -> status
    static final MethodHandle UCP_WORKER_SET_AM_RECV_HANDLER = UCP.bind("ucp_worker_set_am_recv_handler", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    // (ep, id, header, header_length, buffer, count, param) -> ucs_status_ptr_t
    static final MethodHandle UCP_AM_SEND_NBX = UCP.bind("ucp_am_send_nbx", FunctionDescriptor.of(POINTER, POINTER, JAVA_INT, POINTER, SIZE, POINTER, SIZE,
            POINTER));
    // (worker, data_desc, buffer, count, param) -> ucs_status_ptr_t
    static final MethodHandle UCP_AM_RECV_DATA_NBX = UCP.bind("ucp_am_recv_data_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, POINTER, SIZE, POINTER));
    static final MethodHandle UCP_AM_DATA_RELEASE = UCP.bind("ucp_am_data_release", FunctionDescriptor.ofVoid(POINTER, POINTER));
    static final MethodHandle UCP_REQUEST_CHECK_STATUS = UCP.bind("ucp_request_check_status", FunctionDescriptor.of(STATUS, POINTER));
    static final MethodHandle UCP_REQUEST_FREE = UCP.bind("ucp_request_free", FunctionDescriptor.ofVoid(POINTER));


    static {
        UCS.finish();
        UCP.finish();
    }

    private UcpNative()
    {
    }

    /**
     * Keeps UCX from installing its SIGSEGV/SIGBUS/SIGILL/SIGFPE handlers. The JVM takes those
     * signals on purpose (implicit null checks, safepoint polls); a UCX handler in front of it
     * turns them into a crash. libucs reads {@code UCX_ERROR_SIGNALS} from the C environment once,
     * when it is loaded, so it is set here, before the first lookup loads it. The setting is
     * forced: no value other than empty is safe inside a JVM.
     */
    private static boolean disableUcxSignalHandlers()
    {
        try (Arena arena = Arena.ofConfined()) {
            return Libc.setenv("UCX_ERROR_SIGNALS", "", new Errno(arena)) == 0;
        }
    }
}
