package io.kvbridge.core.local;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The JVM-wide directory through which {@code local} instances find each other, and the format of
 * the metadata they exchange: {@code kvbridge-local/1 <jvm id> <agent name>}.
 */
final class LocalFabric
{
    static final LocalFabric INSTANCE = new LocalFabric();

    private static final String MAGIC = "kvbridge-local/1";

    // metadata from another JVM names another fabric id, so it is refused instead of misdirected
    private final String fabricId = UUID.randomUUID().toString();
    private final ConcurrentHashMap<String, LocalTransferBackend> instances = new ConcurrentHashMap<>();

    private LocalFabric()
    {
    }

    void add(LocalTransferBackend backend)
    {
        LocalTransferBackend previous = instances.putIfAbsent(backend.agentName(), backend);
        if (previous != null) {
            throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "agent name '" + backend.agentName()
                    + "' is already used by another local transport in this JVM; give each instance its own name");
        }
    }

    void remove(LocalTransferBackend backend)
    {
        instances.remove(backend.agentName(), backend);
    }

    byte[] metadata(String agentName)
    {
        return (MAGIC + " " + fabricId + " " + agentName).getBytes(StandardCharsets.UTF_8);
    }

    LocalTransferBackend resolve(byte[] metadata)
    {
        if (metadata == null || metadata.length > 1024) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "local metadata is " + (metadata == null ? "null" : metadata.length + " bytes")
                    + " (expected: at most 1024 bytes from LocalTransferBackend.localMetadata())");
        }
        String[] parts = new String(metadata, StandardCharsets.UTF_8).split(" ", -1);
        if (parts.length != 3 || !parts[0].equals(MAGIC)) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "metadata is not from a local transport (expected it to start with '" + MAGIC + "')");
        }
        if (!parts[1].equals(fabricId)) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "peer '" + parts[2] + "' is a local transport in another JVM; local peers must share "
                    + "one JVM: use a cross-process transport such as ucx for peers in other processes");
        }
        LocalTransferBackend peer = instances.get(parts[2]);
        if (peer == null) {
            throw new KvBridgeException(ErrorCode.PEER_UNKNOWN, "local peer '" + parts[2] + "' is closed or was never created");
        }
        return peer;
    }
}
