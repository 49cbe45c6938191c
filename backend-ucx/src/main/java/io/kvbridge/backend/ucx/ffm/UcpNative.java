package io.kvbridge.backend.ucx.ffm;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * One method handle per C function kvbridge calls, resolved once when this class initialises.
 * Initialisation fails with an {@link UnsatisfiedLinkError} naming the library or symbol that is
 * missing; {@link Ucp#loadProblem()} turns that into advice for the user.
 *
 * <p>Pointers travel as {@code JAVA_LONG}: on the 64-bit Linux ABIs this module supports (checked
 * by {@link Ucp#loadProblem()}) a pointer argument or result is passed exactly like a 64-bit
 * integer, and a {@code long} needs no {@code MemorySegment} wrapper, so issuing a put builds no
 * object. {@code ucs_status_t} is a packed one-byte enum in UCX and is always {@code JAVA_BYTE}.
 */
final class UcpNative
{
    /** System property naming a directory that holds {@code libucp.so.0} and {@code libucs.so.0}. */
    static final String LIBRARY_DIR_PROPERTY = "kvbridge.ucx.library-dir";

    private static final Linker LINKER = Linker.nativeLinker();
    private static final ValueLayout POINTER = JAVA_LONG;
    private static final ValueLayout STATUS = JAVA_BYTE;
    private static final ValueLayout SIZE = JAVA_LONG;

    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    static final boolean SIGNALS_LEFT_TO_JVM = disableUcxSignalHandlers();
    static final SymbolLookup UCS = library("libucs.so.0");
    static final SymbolLookup UCP = library("libucp.so.0");

    static final MethodHandle UCS_STATUS_STRING = ucs("ucs_status_string", FunctionDescriptor.of(POINTER, STATUS));

    static final MethodHandle UCP_GET_VERSION = ucp("ucp_get_version", FunctionDescriptor.ofVoid(POINTER, POINTER, POINTER));
    static final MethodHandle UCP_CONFIG_READ = ucp("ucp_config_read", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_CONFIG_MODIFY = ucp("ucp_config_modify", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_CONFIG_RELEASE = ucp("ucp_config_release", FunctionDescriptor.ofVoid(POINTER));
    // ucp_init() is a static inline in ucp.h around this exported symbol
    static final MethodHandle UCP_INIT_VERSION = ucp("ucp_init_version", FunctionDescriptor.of(STATUS, JAVA_INT, JAVA_INT, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_CLEANUP = ucp("ucp_cleanup", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle UCP_CONTEXT_QUERY = ucp("ucp_context_query", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    static final MethodHandle UCP_CONTEXT_PRINT_INFO = ucp("ucp_context_print_info", FunctionDescriptor.ofVoid(POINTER, POINTER));

    static final MethodHandle UCP_WORKER_CREATE = ucp("ucp_worker_create", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_WORKER_DESTROY = ucp("ucp_worker_destroy", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle UCP_WORKER_GET_ADDRESS = ucp("ucp_worker_get_address", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_WORKER_RELEASE_ADDRESS = ucp("ucp_worker_release_address", FunctionDescriptor.ofVoid(POINTER, POINTER));
    // not a critical downcall: progress runs the endpoint error handler, a Java upcall
    static final MethodHandle UCP_WORKER_PROGRESS = ucp("ucp_worker_progress", FunctionDescriptor.of(JAVA_INT, POINTER));
    static final MethodHandle UCP_WORKER_GET_EFD = ucp("ucp_worker_get_efd", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    static final MethodHandle UCP_WORKER_ARM = ucp("ucp_worker_arm", FunctionDescriptor.of(STATUS, POINTER));
    static final MethodHandle UCP_WORKER_FLUSH_NBX = ucp("ucp_worker_flush_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER));

    static final MethodHandle UCP_EP_CREATE = ucp("ucp_ep_create", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_EP_CLOSE_NBX = ucp("ucp_ep_close_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER));
    static final MethodHandle UCP_EP_FLUSH_NBX = ucp("ucp_ep_flush_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER));

    static final MethodHandle UCP_MEM_MAP = ucp("ucp_mem_map", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_MEM_UNMAP = ucp("ucp_mem_unmap", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    static final MethodHandle UCP_MEM_QUERY = ucp("ucp_mem_query", FunctionDescriptor.of(STATUS, POINTER, POINTER));
    static final MethodHandle UCP_RKEY_PACK = ucp("ucp_rkey_pack", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_RKEY_BUFFER_RELEASE = ucp("ucp_rkey_buffer_release", FunctionDescriptor.ofVoid(POINTER));
    static final MethodHandle UCP_EP_RKEY_UNPACK = ucp("ucp_ep_rkey_unpack", FunctionDescriptor.of(STATUS, POINTER, POINTER, POINTER));
    static final MethodHandle UCP_RKEY_DESTROY = ucp("ucp_rkey_destroy", FunctionDescriptor.ofVoid(POINTER));

    // (ep, buffer, count, remote_addr, rkey, param) -> ucs_status_ptr_t
    static final MethodHandle UCP_PUT_NBX = ucp("ucp_put_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, SIZE, JAVA_LONG, POINTER, POINTER));
    static final MethodHandle UCP_GET_NBX = ucp("ucp_get_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, SIZE, JAVA_LONG, POINTER, POINTER));
    // (ep, buffer, count, tag, param) -> ucs_status_ptr_t
    static final MethodHandle UCP_TAG_SEND_NBX = ucp("ucp_tag_send_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, SIZE, JAVA_LONG, POINTER));
    // (worker, tag, tag_mask, remove, info) -> ucp_tag_message_h
    static final MethodHandle UCP_TAG_PROBE_NB = ucp("ucp_tag_probe_nb", FunctionDescriptor.of(POINTER, POINTER, JAVA_LONG, JAVA_LONG, JAVA_INT, POINTER));
    // (worker, buffer, count, message, param) -> ucs_status_ptr_t
    static final MethodHandle UCP_TAG_MSG_RECV_NBX = ucp("ucp_tag_msg_recv_nbx", FunctionDescriptor.of(POINTER, POINTER, POINTER, SIZE, POINTER, POINTER));
    static final MethodHandle UCP_REQUEST_CHECK_STATUS = ucp("ucp_request_check_status", FunctionDescriptor.of(STATUS, POINTER));
    static final MethodHandle UCP_REQUEST_FREE = ucp("ucp_request_free", FunctionDescriptor.ofVoid(POINTER));

    static final MethodHandle EVENTFD = libc("eventfd", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));
    static final MethodHandle READ = libc("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, POINTER, SIZE));
    static final MethodHandle WRITE = libc("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, POINTER, SIZE));
    static final MethodHandle POLL = libc("poll", FunctionDescriptor.of(JAVA_INT, POINTER, JAVA_LONG, JAVA_INT));
    static final MethodHandle CLOSE = libc("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    static final MethodHandle OPEN_MEMSTREAM = libc("open_memstream", FunctionDescriptor.of(POINTER, POINTER, POINTER));
    static final MethodHandle FCLOSE = libc("fclose", FunctionDescriptor.of(JAVA_INT, POINTER));
    static final MethodHandle FREE = libc("free", FunctionDescriptor.ofVoid(POINTER));

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
            MethodHandle setenv = libc("setenv", FunctionDescriptor.of(JAVA_INT, POINTER, POINTER, JAVA_INT));
            int result = (int) setenv.invokeExact(arena.allocateFrom("UCX_ERROR_SIGNALS").address(), arena.allocateFrom("").address(), 1);
            return result == 0;
        }
        catch (Throwable e) {
            throw new AssertionError("setenv failed unexpectedly: " + e, e);
        }
    }

    @SuppressWarnings("restricted")
    private static SymbolLookup library(String soname)
    {
        String directory = System.getProperty(LIBRARY_DIR_PROPERTY);
        try {
            return directory == null
                    ? SymbolLookup.libraryLookup(soname, Arena.global())
                    : SymbolLookup.libraryLookup(Path.of(directory).resolve(soname), Arena.global());
        }
        catch (IllegalArgumentException e) {
            String where = directory == null ? "on the dynamic linker's search path" : "in " + LIBRARY_DIR_PROPERTY + "=" + directory;
            throw new UnsatisfiedLinkError(soname + " was not found " + where + " (" + e.getMessage() + ")");
        }
    }

    private static MethodHandle ucp(String symbol, FunctionDescriptor descriptor)
    {
        return downcall(UCP, "libucp.so.0", symbol, descriptor);
    }

    private static MethodHandle ucs(String symbol, FunctionDescriptor descriptor)
    {
        return downcall(UCS, "libucs.so.0", symbol, descriptor);
    }

    private static MethodHandle libc(String symbol, FunctionDescriptor descriptor)
    {
        return downcall(LIBC, "the C library", symbol, descriptor);
    }

    @SuppressWarnings("restricted")
    private static MethodHandle downcall(SymbolLookup lookup, String library, String symbol, FunctionDescriptor descriptor)
    {
        return LINKER.downcallHandle(lookup.find(symbol)
                .orElseThrow(() -> new UnsatisfiedLinkError(library + " has no symbol " + symbol + "; kvbridge needs UCX 1.13 or newer")), descriptor);
    }
}
