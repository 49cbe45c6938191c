package io.kvbridge.core.engine;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.ServedRole;
import io.kvbridge.core.sidechannel.SideChannelServer;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.SessionKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.transfer.TransferBackend;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a rank shows the outside: its caches registered with its transport, its metadata on the
 * engine's side channel (with the epoch of this incarnation) and its discovery entry. Opened once
 * when the rank starts; {@link #close()} takes it all back and closes the transport.
 *
 * @param name the rank's name in logs.
 * @param services the bridge's services the side channel is acquired from.
 * @param settings the rank's settings.
 * @param role the rank's role, under which the side channel serves it.
 * @param transport the rank's own transport instance.
 * @param server the engine's side channel.
 * @param publication the rank's discovery entry; a no-op without a directory.
 * @param epoch this incarnation of the engine's ranks served by this process's side channel (see {@link EngineServices#epoch}).
 * @param ownAddress where the rank's side channel is reached.
 * @param capabilities what the rank offers its peers.
 */
record RankEndpoint(String name, EngineServices services, ConnectorSettings settings, ServedRole role, TransferBackend transport, SideChannelServer server,
        AutoCloseable publication, long epoch, SideChannelAddress ownAddress, Set<PeerCapability> capabilities)
{
    private static final Logger LOG = LoggerFactory.getLogger(RankEndpoint.class);

    /**
     * Registers the rank's caches, publishes its metadata and its discovery entry; on failure takes
     * back what was done and closes the transport.
     *
     * @param sessions told of every notification session a peer opens with the rank at the side channel.
     */
    static RankEndpoint open(String name, EngineServices services, ConnectorSettings settings, ServedRole role, TransferBackend transport,
            Consumer<SessionKey> sessions)
    {
        CacheGeometry geometry = settings.geometry();
        List<Allocation> registered = new ArrayList<>();
        SideChannelServer acquired = null;
        try {
            for (Allocation allocation : geometry.allocations()) {
                transport.register(allocation);
                registered.add(allocation);
            }
            acquired = services.acquireServer(settings);
            long epoch = services.epoch(settings.engineId());
            Set<PeerCapability> capabilities = EnumSet.noneOf(PeerCapability.class);
            for (TransferMode mode : settings.modes()) {
                capabilities.add(mode == TransferMode.PUSH ? PeerCapability.PUSH : PeerCapability.PULL);
            }
            RankMetadata metadata = new RankMetadata(settings.engineId(), epoch, transport.name(), transport.localMetadata(), capabilities, geometry);
            acquired.publish(metadata, role, sessions);
            SideChannelAddress ownAddress = new SideChannelAddress(settings.advertisedHost(), acquired.address().getPort());
            AutoCloseable publication = services.discovery().publish(ownAddress.host(), ownAddress.port(), metadata);
            return new RankEndpoint(name, services, settings, role, transport, acquired, publication, epoch, ownAddress, Set.copyOf(capabilities));
        }
        catch (RuntimeException e) {
            if (acquired != null) {
                acquired.withdraw(role, RankKey.of(geometry.rank()));
                services.releaseServer(settings.engineId());
            }
            for (Allocation allocation : registered) {
                transport.deregister(allocation);
            }
            transport.close();
            throw e;
        }
    }

    /** Refuses push for a cache in mixed host and device memory, before anything is created for the rank. */
    static void checkMemory(ConnectorSettings settings)
    {
        CacheGeometry geometry = settings.geometry();
        if (mixedMemory(geometry) && settings.modes().contains(TransferMode.PUSH)) {
            throw new KvBridgeException(ErrorCode.UNSUPPORTED, "engine " + settings.engineId() + " rank " + geometry.rank()
                    + ": push does not support caches in mixed host and device memory (regions " + memorySummary(geometry)
                    + "); serve pull only (modes=[PULL]) or keep the cache in one kind of memory");
        }
    }

    private static boolean mixedMemory(CacheGeometry geometry)
    {
        Region first = geometry.regions().getFirst();
        for (Region region : geometry.regions()) {
            if (region.memoryKind() != first.memoryKind() || region.device() != first.device()) {
                return true;
            }
        }
        return false;
    }

    private static String memorySummary(CacheGeometry geometry)
    {
        List<String> kinds = new ArrayList<>();
        for (Region region : geometry.regions()) {
            String kind = region.name() + "=" + region.memoryKind() + "/" + region.device();
            if (kinds.size() < 4) {
                kinds.add(kind);
            }
        }
        return kinds + (geometry.regions().size() > 4 ? " ..." : "");
    }

    /** Withdraws the discovery entry and the side channel entry, deregisters the caches and closes the transport. */
    void close()
    {
        // out of the directory first, so that consumers stop finding a rank about to go
        try {
            publication.close();
        }
        catch (Exception e) {
            LOG.warn("{}: withdrawing the discovery entry failed: {}", name, e.toString());
        }
        server.withdraw(role, RankKey.of(settings.geometry().rank()));
        services.releaseServer(settings.engineId());
        for (Allocation allocation : settings.geometry().allocations()) {
            try {
                transport.deregister(allocation);
            }
            catch (RuntimeException e) {
                LOG.debug("{}: deregistering {} failed: {}", name, allocation, e.toString());
            }
        }
        transport.close();
    }
}
