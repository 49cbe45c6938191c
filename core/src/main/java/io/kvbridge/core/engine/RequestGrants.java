package io.kvbridge.core.engine;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.PullKey;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.transfer.DescriptorList;
import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.WriteStop;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a rank grants its peers for one request: every byte of the request's blocks in every region
 * their cache group addresses, nothing else. A logical block id expands to the kernel blocks it
 * holds; a region several groups overlay is granted each group's blocks. Every transfer a planner
 * derives for the request, whatever the peer's parallelism, block size or layout, lies inside
 * those blocks.
 *
 * <p>Each grant names the request's blocks in a list of their own, one per memory kind and device,
 * released at once (the transport keeps the ranges). A transport that does not check grants
 * answers {@link TransferBackend#NO_GRANT} to a first empty grant and is never asked again.
 *
 * <p>Keys: a pull grant is named by the request's {@link PullKeys pull key}, 16 random bytes drawn
 * for the request that only its parameters carry, so a consumer the router handed them reaches its blocks while they are held and
 * nobody else does, whatever they know of the request; a push grant by 16 random bytes that travel
 * only in the consumer's registration to the producer ranks that write.
 *
 * <p>Threads: any (a producer grants on the thread that reports the prefill, before its parameters
 * leave); one lock.
 */
final class RequestGrants
{
    private static final Logger LOG = LoggerFactory.getLogger(RequestGrants.class);
    private static final int PUSH_KEY_BYTES = 16;
    private static final SecureRandom RANDOM = new SecureRandom();
    // what the first empty grant is made under: it grants nothing, and nobody can present it anyway
    private static final byte[] PROBE_KEY = pushKey();
    private static final long[] NONE = new long[0];

    private final String name;
    private final TransferBackend transport;
    private final CacheGeometry geometry;
    // null until the first grant tells whether the transport checks grants
    private Boolean checked;
    // 0, 1, 2, ...: every descriptor of a request's list is granted
    private int[] indices = new int[0];
    private volatile int live;

    RequestGrants(String name, TransferBackend transport, CacheGeometry geometry)
    {
        this.name = requireNonNull(name, "name is null");
        this.transport = requireNonNull(transport, "transport is null");
        this.geometry = requireNonNull(geometry, "geometry is null");
    }

    /** {@return a fresh key for a push grant} */
    static byte[] pushKey()
    {
        byte[] key = new byte[PUSH_KEY_BYTES];
        RANDOM.nextBytes(key);
        return key;
    }

    /**
     * Grants a request's blocks.
     *
     * @param key what the peer presents.
     * @param access what the peer may do.
     * @param ids logical block ids per cache group, already checked against the capacity.
     * @return one handle per list granted from, for {@link #revoke}; empty when the transport does
     *     not check grants.
     */
    synchronized long[] grant(byte[] key, TransferOp access, int[][] ids)
    {
        if (!checksGrants()) {
            return NONE;
        }
        int factor = geometry.kernelBlocksPerLogical();
        List<Region> regions = geometry.regions();
        List<DescriptorList.Builder> builders = new ArrayList<>();
        List<Region> firstOfList = new ArrayList<>();
        for (Region region : regions) {
            DescriptorList.Builder builder = builderFor(region, builders, firstOfList);
            for (int g = 0; g < ids.length; g++) {
                if (region.groupId() != g && region.groupId() != -1) {
                    continue;
                }
                for (int logical : ids[g]) {
                    for (int k = 0; k < factor; k++) {
                        long block = (long) logical * factor + k;
                        if (block >= region.capacity()) {
                            throw new KvBridgeException(ErrorCode.BLOCK_OUT_OF_RANGE, name + ": block id " + logical + " of group " + g
                                    + " is kernel block " + block + ", outside region " + region.name() + " of " + region.capacity() + " blocks");
                        }
                        builder.add(region.blockAddress((int) block), region.blockBytes());
                    }
                }
            }
        }
        long[] handles = new long[builders.size()];
        int granted = 0;
        try {
            for (DescriptorList.Builder builder : builders) {
                DescriptorList blocks = builder.build();
                if (blocks.size() == 0) {
                    continue;
                }
                // the grant keeps the ranges: the list is only how they are named
                PreparedList list = transport.prepareLocal(blocks);
                try {
                    handles[granted] = transport.grant(key, access, list, identity(blocks.size()), blocks.size());
                    granted++;
                }
                finally {
                    transport.releasePrepared(list);
                }
            }
        }
        catch (RuntimeException e) {
            live += granted;
            revoke(Arrays.copyOf(handles, granted));
            throw e;
        }
        live += granted;
        return Arrays.copyOf(handles, granted);
    }

    /** {@return grants made and not yet revoked} */
    int live()
    {
        return live;
    }

    private static DescriptorList.Builder builderFor(Region region, List<DescriptorList.Builder> builders, List<Region> firstOfList)
    {
        for (int i = 0; i < builders.size(); i++) {
            Region first = firstOfList.get(i);
            if (first.memoryKind() == region.memoryKind() && first.device() == region.device()) {
                return builders.get(i);
            }
        }
        DescriptorList.Builder builder = DescriptorList.builder(region.memoryKind(), region.device(), 64);
        builders.add(builder);
        firstOfList.add(region);
        return builder;
    }

    private int[] identity(int size)
    {
        if (indices.length < size) {
            int old = indices.length;
            indices = Arrays.copyOf(indices, Math.max(size, old * 2));
            for (int i = old; i < indices.length; i++) {
                indices[i] = i;
            }
        }
        return indices;
    }

    /**
     * Grants a held request's blocks to the consumers that pull it with the key, or grants nothing
     * when pull is off or the grant fails: a consumer's READ is then refused and fails the request
     * there, and nothing is exposed.
     */
    long[] grantPulls(String owner, String requestId, PullKey pullKey, int[][] ids)
    {
        if (pullKey.isNone()) {
            return HeldRequest.NO_GRANTS;
        }
        try {
            return grant(pullKey.bytes(), TransferOp.READ, ids);
        }
        catch (KvBridgeException e) {
            LOG.warn("{}: granting the blocks of request {} to pulling consumers failed: {}", owner, requestId, e.getMessage());
            return HeldRequest.NO_GRANTS;
        }
    }

    /**
     * Ends grants; a failure is logged, never thrown, since the blocks are freed either way.
     *
     * @return no grants, for the caller to keep instead.
     */
    synchronized long[] revoke(long[] handles)
    {
        live -= handles.length;
        for (long handle : handles) {
            try {
                transport.revoke(handle);
            }
            catch (RuntimeException e) {
                LOG.warn("{}: revoking grant {} failed: {}", name, handle, e.toString());
            }
        }
        return NONE;
    }

    /**
     * Ends a consumer's grants to its writers and tells whether that proves no write under them
     * lands any more: the transport checks grants, a returning revoke proves its admitted writes
     * ended ({@link WriteStop#ON_RETURN}), and every revoke returned. A revoke that throws proves
     * nothing: the writes it admitted may still run.
     *
     * @param handles the request's grants; none when the transport does not check grants.
     * @return whether the writes under them provably stopped.
     */
    synchronized boolean revokeWrites(long[] handles)
    {
        live -= handles.length;
        boolean proven = Boolean.TRUE.equals(checked) && transport.writeStopOnRevoke() == WriteStop.ON_RETURN;
        for (long handle : handles) {
            try {
                transport.revoke(handle);
            }
            catch (RuntimeException e) {
                proven = false;
                LOG.warn("{}: revoking grant {} failed, so its writers may still write: {}", name, handle, e.toString());
            }
        }
        return proven;
    }

    private boolean checksGrants()
    {
        if (checked == null) {
            Region first = geometry.regions().getFirst();
            PreparedList probe = transport.prepareLocal(DescriptorList.builder(first.memoryKind(), first.device(), 1)
                    .add(first.base(), first.blockBytes()).build());
            try {
                long handle = transport.grant(PROBE_KEY, TransferOp.READ, probe, new int[0], 0);
                checked = handle != TransferBackend.NO_GRANT;
                transport.revoke(handle);
            }
            finally {
                transport.releasePrepared(probe);
            }
            LOG.debug("{}: transport {} {} peer accesses against grants", name, transport.name(), checked ? "checks" : "does not check");
        }
        return checked;
    }
}
