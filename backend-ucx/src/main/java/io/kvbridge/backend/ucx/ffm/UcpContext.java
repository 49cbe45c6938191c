package io.kvbridge.backend.ucx.ffm;

import static io.kvbridge.backend.ucx.ffm.UcpLayouts.CONTEXT_ATTR;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.MEM_ATTR;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.MEM_MAP_PARAMS;
import static io.kvbridge.backend.ucx.ffm.UcpLayouts.PARAMS;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;

/**
 * The context side of UCP: the library version, configuration, the context itself, and the memory
 * it maps and packs keys for. Setup and registration calls, off the hot path; statuses are checked
 * on every call, and a failing call throws {@code NATIVE_ERROR} naming the function.
 *
 * <p>Memory calls must be made on the instance's owner thread, like every call that touches what
 * its worker uses.
 */
public final class UcpContext
{
    /** {@code UCP_FEATURE_TAG}. */
    public static final long FEATURE_TAG = 1L;
    /** {@code UCP_FEATURE_RMA}. */
    public static final long FEATURE_RMA = 1L << 1;
    /** {@code UCP_FEATURE_AM}. */
    public static final long FEATURE_AM = 1L << 6;
    /** {@code UCP_FEATURE_WAKEUP}. */
    public static final long FEATURE_WAKEUP = 1L << 4;

    /** {@code UCS_MEMORY_TYPE_CUDA} as a bit of {@link #memoryTypes}. */
    public static final long MEMORY_TYPE_CUDA_BIT = 1L << 1;

    private static final int API_MAJOR = 1;
    private static final int API_MINOR = 13;
    private static final long PARAM_FIELD_FEATURES = 1L;
    private static final long PARAM_FIELD_NAME = 1L << 8;
    private static final long MEM_MAP_FIELD_ADDRESS = 1L;
    private static final long MEM_MAP_FIELD_LENGTH = 1L << 1;
    private static final long MEM_MAP_FIELD_FLAGS = 1L << 2;
    private static final int MEM_MAP_ALLOCATE = 1 << 1;
    private static final long MEM_ATTR_FIELD_ADDRESS = 1L;
    private static final long MEM_ATTR_FIELD_LENGTH = 1L << 1;
    private static final long CONTEXT_ATTR_FIELD_MEMORY_TYPES = 1L << 2;

    private UcpContext()
    {
    }

    /**
     * Returns the library version.
     *
     * @return {@code major.minor.release}, e.g. {@code 1.13.1}.
     */
    public static String version()
    {
        return Scratch.with(scratch -> {
            MemorySegment numbers = scratch.allocate(JAVA_INT, 3);
            UcpNative.UCP_GET_VERSION.invokeExact(numbers.address(), numbers.address() + 4, numbers.address() + 8);
            return numbers.getAtIndex(JAVA_INT, 0) + "." + numbers.getAtIndex(JAVA_INT, 1) + "." + numbers.getAtIndex(JAVA_INT, 2);
        });
    }

    /**
     * Tells whether this library version is new enough.
     *
     * @param version from {@link #version()}.
     * @return true for 1.13 and newer.
     */
    public static boolean supportedVersion(String version)
    {
        String[] parts = version.split("\\.");
        int major = Integer.parseInt(parts[0]);
        int minor = Integer.parseInt(parts[1]);
        return major > API_MAJOR || (major == API_MAJOR && minor >= API_MINOR);
    }

    /**
     * Reads the configuration from the {@code UCX_*} environment, then applies overrides, trying
     * another spelling of a name UCX refuses. UCX's versions match a transport's own settings
     * differently: 1.13 takes them without the transport's prefix ({@code RX_SEG_SIZE}) and accepts,
     * then ignores, the prefixed spelling; 1.22 refuses the bare name and takes the prefixed one
     * ({@code TCP_RX_SEG_SIZE}).
     *
     * @param overrides UCX configuration names without the {@code UCX_} prefix, with values.
     * @param otherSpellings for a name of {@code overrides}, the spelling tried when UCX refuses it.
     * @return the configuration handle; release it with {@link #configRelease}.
     * @throws KvBridgeException {@code CONFIG_INVALID} naming an override UCX refused in every spelling.
     */
    public static long configRead(Map<String, String> overrides, Map<String, String> otherSpellings)
    {
        long config = Scratch.with(scratch -> {
            MemorySegment out = scratch.allocate(ADDRESS);
            UcpStatus.check((byte) UcpNative.UCP_CONFIG_READ.invokeExact(0L, 0L, out.address()), "ucp_config_read");
            return out.get(JAVA_LONG, 0);
        });
        return Scratch.with(scratch -> {
            for (Map.Entry<String, String> override : overrides.entrySet()) {
                String name = override.getKey();
                MemorySegment value = scratch.allocateFrom(override.getValue());
                byte status = (byte) UcpNative.UCP_CONFIG_MODIFY.invokeExact(config, scratch.allocateFrom(name).address(), value.address());
                String other = otherSpellings.get(name);
                if (status != UcpStatus.OK && other != null) {
                    name = name + " (and " + other + ")";
                    status = (byte) UcpNative.UCP_CONFIG_MODIFY.invokeExact(config, scratch.allocateFrom(other).address(), value.address());
                }
                if (status != UcpStatus.OK) {
                    configRelease(config);
                    throw new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT,
                            "UCX refused %s=%s: %s; check the name and value against 'ucx_info -c'", name, override.getValue(), UcpStatus.statusString(status)));
                }
            }
            return config;
        });
    }

    /**
     * Releases a configuration.
     *
     * @param config from {@link #configRead}.
     */
    public static void configRelease(long config)
    {
        Scratch.run(() -> {
            UcpNative.UCP_CONFIG_RELEASE.invokeExact(config);
        });
    }

    /**
     * Creates a context ({@code ucp_init}).
     *
     * @param config from {@link #configRead}; may be released afterwards.
     * @param features {@code FEATURE_*} bits.
     * @param name context name shown in UCX diagnostics.
     * @return the context handle.
     */
    public static long init(long config, long features, String name)
    {
        return Scratch.with(scratch -> {
            MemorySegment params = scratch.allocate(PARAMS);
            params.set(JAVA_LONG, UcpLayouts.PARAMS_FIELD_MASK, PARAM_FIELD_FEATURES | PARAM_FIELD_NAME);
            params.set(JAVA_LONG, UcpLayouts.PARAMS_FEATURES, features);
            params.set(ADDRESS, UcpLayouts.PARAMS_NAME, scratch.allocateFrom(name));
            MemorySegment out = scratch.allocate(ADDRESS);
            UcpStatus.check((byte) UcpNative.UCP_INIT_VERSION.invokeExact(API_MAJOR, API_MINOR, params.address(), config, out.address()), "ucp_init");
            return out.get(JAVA_LONG, 0);
        });
    }

    /**
     * Destroys a context; every worker and mapping of it must be gone.
     *
     * @param context the context.
     */
    public static void cleanup(long context)
    {
        Scratch.run(() -> {
            UcpNative.UCP_CLEANUP.invokeExact(context);
        });
    }

    /**
     * Returns the memory types the context can register.
     *
     * @param context the context.
     * @return a bit set of {@code ucs_memory_type_t}; bit 0 is host memory.
     */
    public static long memoryTypes(long context)
    {
        return Scratch.with(scratch -> {
            MemorySegment attr = scratch.allocate(CONTEXT_ATTR);
            attr.set(JAVA_LONG, UcpLayouts.CONTEXT_ATTR_FIELD_MASK, CONTEXT_ATTR_FIELD_MEMORY_TYPES);
            UcpStatus.check((byte) UcpNative.UCP_CONTEXT_QUERY.invokeExact(context, attr.address()), "ucp_context_query");
            return attr.get(JAVA_LONG, UcpLayouts.CONTEXT_ATTR_MEMORY_TYPES);
        });
    }

    /**
     * Returns what {@code ucp_context_print_info} writes: components, memory domains and the
     * transport resources the context selected.
     *
     * @param context the context.
     * @return the text.
     */
    public static String contextInfo(long context)
    {
        return Scratch.with(scratch -> {
            MemorySegment bufferOut = scratch.allocate(ADDRESS);
            MemorySegment sizeOut = scratch.allocate(JAVA_LONG);
            Errno errno = new Errno(scratch);
            long stream = Libc.openMemstream(bufferOut.address(), sizeOut.address(), errno);
            if (stream == 0) {
                throw errno.failure(ErrorCode.NATIVE_ERROR, "open_memstream", "opening a stream to list UCX resources into");
            }
            UcpNative.UCP_CONTEXT_PRINT_INFO.invokeExact(context, stream);
            int closed = Libc.fclose(stream, errno);
            long buffer = bufferOut.get(JAVA_LONG, 0);
            try {
                if (closed != 0) {
                    throw errno.failure(ErrorCode.NATIVE_ERROR, "fclose", "closing the stream UCX listed its resources into");
                }
                byte[] text = new byte[(int) Math.min(sizeOut.get(JAVA_LONG, 0), 1 << 20)];
                MemorySegment.copy(Scratch.pointer(buffer, text.length), JAVA_BYTE, 0, text, 0, text.length);
                return new String(text, StandardCharsets.UTF_8);
            }
            finally {
                Libc.free(buffer);
            }
        });
    }

    /**
     * Registers memory the caller owns.
     *
     * @param context the context.
     * @param address first byte.
     * @param length in bytes.
     * @return the memory handle.
     */
    public static long memMap(long context, long address, long length)
    {
        return memMap(context, address, length, 0, "ucp_mem_map");
    }

    /**
     * Lets UCX allocate and register memory in the form its transports move best (shared memory
     * on one host, so a peer's put is a plain copy).
     *
     * @param context the context.
     * @param length in bytes.
     * @return the memory handle; read the address with {@link #memAddress}.
     */
    public static long memAllocate(long context, long length)
    {
        return memMap(context, 0, length, MEM_MAP_ALLOCATE, "ucp_mem_map(UCP_MEM_MAP_ALLOCATE)");
    }

    private static long memMap(long context, long address, long length, int flags, String what)
    {
        return Scratch.with(scratch -> {
            MemorySegment params = scratch.allocate(MEM_MAP_PARAMS);
            params.set(JAVA_LONG, UcpLayouts.MEM_MAP_FIELD_MASK, MEM_MAP_FIELD_ADDRESS | MEM_MAP_FIELD_LENGTH | MEM_MAP_FIELD_FLAGS);
            params.set(JAVA_LONG, UcpLayouts.MEM_MAP_ADDRESS, address);
            params.set(JAVA_LONG, UcpLayouts.MEM_MAP_LENGTH, length);
            params.set(JAVA_INT, UcpLayouts.MEM_MAP_FLAGS, flags);
            MemorySegment out = scratch.allocate(ADDRESS);
            UcpStatus.check((byte) UcpNative.UCP_MEM_MAP.invokeExact(context, params.address(), out.address()), what);
            return out.get(JAVA_LONG, 0);
        });
    }

    /**
     * Returns the first address of a mapping.
     *
     * @param memh the memory handle.
     * @return the address.
     */
    public static long memAddress(long memh)
    {
        return Scratch.with(scratch -> {
            MemorySegment attr = scratch.allocate(MEM_ATTR);
            attr.set(JAVA_LONG, UcpLayouts.MEM_ATTR_FIELD_MASK, MEM_ATTR_FIELD_ADDRESS | MEM_ATTR_FIELD_LENGTH);
            UcpStatus.check((byte) UcpNative.UCP_MEM_QUERY.invokeExact(memh, attr.address()), "ucp_mem_query");
            return attr.get(JAVA_LONG, UcpLayouts.MEM_ATTR_ADDRESS);
        });
    }

    /**
     * Removes a registration; memory UCX allocated is freed.
     *
     * @param context the context.
     * @param memh the memory handle.
     */
    public static void memUnmap(long context, long memh)
    {
        Scratch.run(() -> UcpStatus.check((byte) UcpNative.UCP_MEM_UNMAP.invokeExact(context, memh), "ucp_mem_unmap"));
    }

    /**
     * Packs the remote key a peer needs to address a mapping.
     *
     * @param context the context.
     * @param memh the memory handle.
     * @return the packed key.
     */
    public static byte[] rkeyPack(long context, long memh)
    {
        return Scratch.with(scratch -> {
            MemorySegment bufferOut = scratch.allocate(ADDRESS);
            MemorySegment lengthOut = scratch.allocate(JAVA_LONG);
            UcpStatus.check((byte) UcpNative.UCP_RKEY_PACK.invokeExact(context, memh, bufferOut.address(), lengthOut.address()), "ucp_rkey_pack");
            long buffer = bufferOut.get(JAVA_LONG, 0);
            try {
                return Scratch.pointer(buffer, lengthOut.get(JAVA_LONG, 0)).toArray(JAVA_BYTE);
            }
            finally {
                UcpNative.UCP_RKEY_BUFFER_RELEASE.invokeExact(buffer);
            }
        });
    }
}
