package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpContext;
import io.kvbridge.backend.ucx.ffm.UcpStatus;
import io.kvbridge.backend.ucx.ffm.UcpWorker;
import io.kvbridge.backend.ucx.ffm.WakeupFd;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native state of one instance: its UCP context and single-threaded worker, the worker's event
 * descriptor with the eventfd other threads signal, and the owner thread's reusable request
 * parameters and message buffers.
 *
 * <p>Threads: created, used and released on the owner thread only, except {@link #signal()}, which
 * any thread may call, and the values published before the constructor of the transport returns
 * ({@link #workerAddress()}, {@link #transports()}, {@link #version()}, {@link #deviceMemory()}).
 */
final class UcxWorker
{
    private static final Logger LOG = LoggerFactory.getLogger(UcxWorker.class);
    private static final AtomicBoolean TCP_WARNED = new AtomicBoolean();

    private final String agentName;
    private final UcxOptions options;

    private volatile WakeupFd wakeup;
    private volatile byte[] workerAddress;
    private volatile boolean deviceMemory;
    private volatile String transports = "";
    private volatile String version = "";

    // owner thread only
    private long context;
    private long worker;
    private int workerFd;
    private Arena arena;
    private NativeBuffers buffers;
    private MemorySegment rmaParam;
    private MemorySegment emptyParam;
    private MemorySegment amParam;
    private MemorySegment tagInfo;

    UcxWorker(String agentName, UcxOptions options)
    {
        this.agentName = agentName;
        this.options = options;
    }

    /** Creates the context and worker; on failure {@link #release()} frees what was made. */
    void open()
    {
        arena = Arena.ofConfined();
        buffers = new NativeBuffers(arena);
        rmaParam = UcpWorker.newRequestParam(arena);
        emptyParam = UcpWorker.newRequestParam(arena);
        amParam = UcpWorker.newRequestParam(arena);
        tagInfo = UcpWorker.newTagInfo(arena);
        wakeup = new WakeupFd();
        long config = UcpContext.configRead(options.ucxOverrides(), UcxOptions.UCX_SPELLINGS);
        try {
            // without RMA, UCX installs no handlers for the puts and gets it emulates over active
            // messages, which write and read any address a peer names: a granted instance needs none
            long rma = options.granted() ? 0 : UcpContext.FEATURE_RMA;
            context = UcpContext.init(config, UcpContext.FEATURE_TAG | rma | UcpContext.FEATURE_AM | UcpContext.FEATURE_WAKEUP, agentName);
        }
        catch (KvBridgeException e) {
            if (!options.tls().isEmpty() || !options.netDevices().isEmpty() || !options.extraConfig().isEmpty()) {
                throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "UCX could not start with tls=" + options.describeTls() + " net-devices="
                        + describe(options.netDevices()) + " ucx-config=" + options.extraConfig() + ": " + e.getMessage()
                        + "; list what this host offers with ucx_info -d", e);
            }
            throw e;
        }
        finally {
            UcpContext.configRelease(config);
        }
        version = UcpContext.version();
        deviceMemory = (UcpContext.memoryTypes(context) & UcpContext.MEMORY_TYPE_CUDA_BIT) != 0;
        transports = UcxResources.transports(UcpContext.contextInfo(context));
        if (transports.contains("tcp/") && !options.uncheckedTcpLane()) {
            // the options refuse the lanes they can see; this catches whatever else brought tcp in
            // (a UCX alias, a direct caller), before the worker opens its listening sockets
            throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "ucx: UCX selected its tcp transport (" + transports + ") with tls="
                    + options.describeTls() + ", whose wire protocol writes wherever a put request names before any grant is checked; leave tcp out "
                    + "(e.g. tls=sm), use the tcp transport between hosts, or set " + UcxOptions.ALLOW_UNCHECKED_TCP_LANE
                    + "=true where only trusted hosts reach UCX's TCP ports");
        }
        if (transports.contains("tcp/") && TCP_WARNED.compareAndSet(false, true)) {
            // once per process: an engine opens one instance per rank and layer group, all alike
            LOG.warn("ucx instance {} opened UCX's tcp transport ({}; said once per process): any process that reaches its TCP port "
                    + "can write wherever UCX's tcp wire protocol names, with no grant and no key; keep that port on a network only serving "
                    + "hosts reach, leave tcp out of tls where peers share this host, or use the tcp transport where TCP is the only lane",
                    agentName, transports);
        }
        worker = UcpWorker.workerCreate(context, agentName);
        workerFd = UcpWorker.workerEventFd(worker);
        workerAddress = UcpWorker.workerAddress(worker);
    }

    long context()
    {
        return context;
    }

    long worker()
    {
        return worker;
    }

    /** @return true once the worker exists, until it is released. */
    boolean opened()
    {
        return worker != 0;
    }

    NativeBuffers buffers()
    {
        return buffers;
    }

    /** @return the parameter puts and gets carry, with the memory handle of their local range. */
    MemorySegment rmaParam()
    {
        return rmaParam;
    }

    /** @return the parameter active-message sends carry, with their flags and local memory handle. */
    MemorySegment amParam()
    {
        return amParam;
    }

    /** @return a zeroed request parameter for flushes, sends and receives. */
    MemorySegment emptyParam()
    {
        return emptyParam;
    }

    MemorySegment tagInfo()
    {
        return tagInfo;
    }

    byte[] workerAddress()
    {
        return workerAddress;
    }

    boolean deviceMemory()
    {
        return deviceMemory;
    }

    String transports()
    {
        return transports;
    }

    String version()
    {
        return version;
    }

    /** Wakes the owner thread if it sleeps in {@link #await}; any thread. */
    void signal()
    {
        WakeupFd fd = wakeup;
        if (fd != null) {
            fd.signal();
        }
    }

    /**
     * Sleeps on the worker's event descriptor and the eventfd, at most {@code timeoutMillis}. When
     * the worker has events pending (it could not be armed) it returns at once, unless
     * {@code evenIfPending}: then it sleeps on the eventfd alone, for a caller whose last progress
     * found nothing to do although UCX says it has something (work stuck on a stopped peer).
     *
     * @return true when the worker was armed, false when UCX had events pending.
     */
    boolean await(int timeoutMillis, boolean evenIfPending)
    {
        if (UcpWorker.workerArm(worker)) {
            wakeup.await(workerFd, timeoutMillis);
            return true;
        }
        if (evenIfPending) {
            wakeup.await(-1, timeoutMillis);
        }
        return false;
    }

    /**
     * Flushes the worker, which includes connections UCX is still setting up for peers that connected
     * to this one; false when that did not end in time.
     */
    boolean flush(long deadlineNanos)
    {
        long request = UcpWorker.workerFlushNbx(worker, emptyParam);
        if (request == 0 || UcpStatus.isError(request)) {
            return true;
        }
        while (UcpWorker.requestStatus(request) == UcpStatus.IN_PROGRESS) {
            if (System.nanoTime() - deadlineNanos > 0) {
                UcpWorker.requestFree(request);
                return false;
            }
            UcpWorker.workerProgress(worker);
            Thread.yield();
        }
        UcpWorker.requestFree(request);
        return true;
    }

    /** Destroys the worker and context and frees owner memory; safe after a partial start. */
    void release()
    {
        if (worker != 0) {
            UcpWorker.workerDestroy(worker);
            worker = 0;
        }
        if (context != 0) {
            UcpContext.cleanup(context);
            context = 0;
        }
        if (arena != null) {
            arena.close();
            arena = null;
        }
        WakeupFd fd = wakeup;
        if (fd != null) {
            fd.close();
        }
    }

    static String describe(String value)
    {
        return value.isEmpty() ? "(UCX default)" : value;
    }
}
