package io.kvbridge.backend.tcp;

import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.transport.AbstractTransferBackendFactory;
import io.kvbridge.transport.NativeLibrary;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Factory of the {@code tcp} transport: blocks move over one TCP connection per peer and direction,
 * in kvbridge's own framing, and the target checks every run against its grants before a byte
 * lands or leaves. It needs no native library, so it is available wherever Java can open a socket.
 *
 * <p>Options: {@code host} (listen address; default the side channel's, else {@code 127.0.0.1}),
 * {@code port} (0), {@code advertise-host}, {@code connect-timeout-ms} (10000),
 * {@code transfer-timeout-ms} (0: none), {@code close-timeout-ms} (2000), {@code keepalive-s} (5),
 * {@code idle-spin-us} (50), {@code max-in-flight} (65536), {@code socket-buffer-bytes} (0:
 * the system's); see the module README.
 */
public final class TcpBackendFactory extends AbstractTransferBackendFactory
{
    /** The transport's name. */
    public static final String NAME = "tcp";

    /**
     * Creates the factory; {@link java.util.ServiceLoader} finds it through {@code META-INF/services}.
     * Its priority is below {@code ucx} (10), above {@code local} (0): it reaches other processes and
     * hosts, without RDMA.
     */
    public TcpBackendFactory()
    {
        super(NAME, 5);
    }

    @Override
    public Availability probe()
    {
        Map<String, String> details = new LinkedHashMap<>();
        details.put("data", "kvbridge's own frames over one TCP connection per peer; the target checks every run against its grants");
        details.put("listen", "the side channel's address by default (option host)");
        details.put("native-access", NativeLibrary.nativeAccessDetail(TcpBackendFactory.class));
        return Availability.available(EnumSet.of(Capability.HOST_MEMORY, Capability.CROSS_PROCESS, Capability.CROSS_HOST,
                Capability.PEER_FAILURE_DETECTION, Capability.COALESCING, Capability.GRANTED_ACCESS), details);
    }

    /**
     * Reads the options as {@link #create} does, opening nothing (the listen address defaults as for a caller that does not say).
     *
     * @param config transport options.
     * @return true: the options were checked.
     */
    @Override
    protected boolean readOptions(Map<String, String> config)
    {
        TcpOptions.parse(config, () -> NAME);
        return true;
    }

    @Override
    public TransferBackend create(Map<String, String> config, BackendContext context)
    {
        return new TcpTransferBackend(context.agentName(), TcpOptions.parse(config, context), context.connectionKey().orElse(null));
    }
}
