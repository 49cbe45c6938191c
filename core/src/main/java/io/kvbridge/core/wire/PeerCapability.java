package io.kvbridge.core.wire;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.Collection;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * What an engine can do with its peers, advertised in its metadata and negotiated as a set: two
 * engines use exactly the capabilities both advertise. A producer advertising both {@link #PUSH} and
 * {@link #PULL} therefore pairs with a push-only consumer and with a pull-only one.
 */
public enum PeerCapability
{
    /** The producer writes finished blocks into the consumer's memory. */
    PUSH("push"),
    /** The consumer reads finished blocks from the producer's memory. */
    PULL("pull"),
    /** Packed MLA regions (several layers' pages in one block) with member offsets. */
    PACKED_MLA("packed-mla"),
    /** The consumer itself runs several pipeline stages, each receiving its own layers. */
    DECODE_PIPELINE_PARALLEL("decode-pp"),
    /** Regions are paired by member layer name rather than by index (pipeline-parallel push). */
    LAYER_NAME_ROUTING("layer-name-routing");

    private final String wireName;

    PeerCapability(String wireName)
    {
        this.wireName = wireName;
    }

    /**
     * Returns the name written on the wire.
     *
     * @return e.g. {@code packed-mla}.
     */
    public String wireName()
    {
        return wireName;
    }

    /**
     * Finds a capability by wire name.
     *
     * @param wireName name as written on the wire.
     * @return the capability, or null when this version does not know it (a newer peer may
     *     advertise more; unknown names are ignored, never an error).
     */
    public static PeerCapability fromWireName(String wireName)
    {
        for (PeerCapability capability : values()) {
            if (capability.wireName.equals(wireName)) {
                return capability;
            }
        }
        return null;
    }

    /**
     * Computes what two engines use together: the capabilities both advertise. At least one
     * transfer mode ({@link #PUSH} or {@link #PULL}) must be common.
     *
     * @param local capabilities of this engine.
     * @param remote capabilities the peer advertised.
     * @param peer names the peer in messages.
     * @return the common capabilities.
     * @throws KvBridgeException with {@link ErrorCode#HANDSHAKE_FAILED} when no transfer mode is common.
     */
    public static Set<PeerCapability> negotiate(Collection<PeerCapability> local, Collection<PeerCapability> remote, String peer)
    {
        requireNonNull(local, "local is null");
        requireNonNull(remote, "remote is null");
        Set<PeerCapability> common = local.isEmpty() ? EnumSet.noneOf(PeerCapability.class) : EnumSet.copyOf(local);
        common.retainAll(remote);
        if (!common.contains(PUSH) && !common.contains(PULL)) {
            throw new KvBridgeException(ErrorCode.HANDSHAKE_FAILED, String.format(Locale.ROOT,
                    "no common transfer mode with %s: local=%s remote=%s (enable push or pull on both engines)",
                    peer, wireNames(local), wireNames(remote)));
        }
        return Set.copyOf(common);
    }

    /**
     * Lists wire names in declaration order, for messages and tables.
     *
     * @param capabilities the capabilities.
     * @return e.g. {@code [push, pull]}.
     */
    public static List<String> wireNames(Collection<PeerCapability> capabilities)
    {
        Set<PeerCapability> sorted = capabilities.isEmpty() ? EnumSet.noneOf(PeerCapability.class) : EnumSet.copyOf(capabilities);
        return sorted.stream().map(PeerCapability::wireName).toList();
    }
}
