package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

/**
 * Where an engine's side channel listens, as peers reach it.
 *
 * @param host host name or address literal; not empty.
 * @param port TCP port in {@code [1, 65535]}.
 */
public record SideChannelAddress(String host, int port)
{
    /** Validates the values. */
    public SideChannelAddress
    {
        requireNonNull(host, "host is null");
        checkArgument(!host.isEmpty(), "side channel host is empty");
        checkArgument(port > 0 && port <= 65_535, "side channel port=%d is outside [1, 65535]", port);
    }

    @Override
    public String toString()
    {
        return host.indexOf(':') >= 0 ? "[" + host + "]:" + port : host + ":" + port;
    }
}
