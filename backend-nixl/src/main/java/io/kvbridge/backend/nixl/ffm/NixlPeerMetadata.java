package io.kvbridge.backend.nixl.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.nixl.ffm.NixlStatus.Meaning;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * What one {@link NixlAgent} knows of peers: its own metadata blob, and the peers' blobs it loads,
 * checks and forgets. Blobs and names NIXL hands back are copied and freed before returning.
 *
 * <p>Threads: the agent's (one at a time, checked by the agent); its scratch memory lives in the
 * agent's arena.
 */
final class NixlPeerMetadata
{
    private static final Meaning LOAD = new Meaning(ErrorCode.PROTOCOL_ERROR, ErrorCode.PROTOCOL_ERROR, ErrorCode.PEER_UNKNOWN, false);

    private final NixlLibrary nixl;
    private final String agentName;
    private final MemorySegment outAddress;
    private final MemorySegment outData;
    private final MemorySegment outLong;

    NixlPeerMetadata(NixlLibrary nixl, String agentName, Arena arena)
    {
        this.nixl = requireNonNull(nixl, "nixl is null");
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.outAddress = arena.allocate(ADDRESS);
        this.outData = arena.allocate(ADDRESS);
        this.outLong = arena.allocate(JAVA_LONG);
    }

    private void check(int status, String function, Meaning meaning, String context)
    {
        NixlStatus.check(status, function, meaning, nixl.level, context);
    }

    /**
     * Reads the agent's own blob.
     *
     * @param agent the agent's handle.
     * @return connection info and every registration made so far; opaque bytes.
     */
    byte[] local(long agent)
    {
        try {
            check((int) nixl.getLocalMd.invokeExact(agent, outData, outLong), "nixl_capi_get_local_md", NixlStatus.INTERNAL,
                    "reading the metadata of agent " + agentName);
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
        MemorySegment data = outData.get(ADDRESS, 0);
        try {
            return NixlMemory.bytes(data, outLong.get(JAVA_LONG, 0));
        }
        finally {
            NixlLibrary.free(data);
        }
    }

    /**
     * Loads a peer's blob (or merges it into what is known of that peer).
     *
     * @param agent the agent's handle.
     * @param blob the peer's own blob.
     * @return the peer's agent name.
     */
    String load(long agent, byte[] blob)
    {
        if (blob.length == 0) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "the peer's NIXL metadata is empty; pass the bytes its localMetadata() returned");
        }
        try (Arena call = Arena.ofConfined()) {
            MemorySegment data = call.allocate(blob.length);
            MemorySegment.copy(blob, 0, data, JAVA_BYTE, 0, blob.length);
            int status = (int) nixl.loadRemoteMd.invokeExact(agent, data, (long) blob.length, outAddress);
            if (status == NixlStatus.INVALID_PARAM) {
                throw NixlStatus.error("nixl_capi_load_remote_md", status, LOAD, nixl.level, "loading " + blob.length
                        + " bytes of peer metadata: NIXL refuses an agent's own metadata, so connect to another instance");
            }
            check(status, "nixl_capi_load_remote_md", LOAD, "loading " + blob.length
                    + " bytes of peer metadata: it is corrupt, shares no backend with agent " + agentName + ", or the peer restarted with new connection info");
            MemorySegment peer = outAddress.get(ADDRESS, 0);
            try {
                return NixlMemory.string(peer);
            }
            finally {
                NixlLibrary.free(peer);
            }
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }

    /**
     * Tells whether any metadata of a peer is loaded.
     *
     * @param agent the agent's handle.
     * @param peer the peer's agent name.
     * @return true when loaded.
     */
    boolean loaded(long agent, String peer)
    {
        try (Arena call = Arena.ofConfined()) {
            int status = (int) nixl.checkRemoteMd.invokeExact(agent, call.allocateFrom(peer), 0L);
            if (status == NixlStatus.NOT_FOUND || status == NixlStatus.BACKEND) {
                return false;
            }
            check(status, "nixl_capi_check_remote_md", NixlStatus.INTERNAL, "checking metadata of peer " + peer);
            return true;
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }

    /**
     * Forgets a peer and disconnects from it.
     *
     * @param agent the agent's handle.
     * @param peer the peer's agent name.
     * @return false when NIXL did not know the peer (already dropped).
     */
    boolean invalidate(long agent, String peer)
    {
        try (Arena call = Arena.ofConfined()) {
            int status = (int) nixl.invalidateRemoteMd.invokeExact(agent, call.allocateFrom(peer));
            if (status == NixlStatus.NOT_FOUND || (status == NixlStatus.BACKEND && nixl.level == NixlApiLevel.V1_4)) {
                return false;
            }
            check(status, "nixl_capi_invalidate_remote_md", NixlStatus.INTERNAL, "forgetting peer " + peer);
            return true;
        }
        catch (Throwable t) {
            throw NixlLibrary.rethrow(t);
        }
    }
}
