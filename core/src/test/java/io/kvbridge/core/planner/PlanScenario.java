package io.kvbridge.core.planner;

import static io.kvbridge.core.planner.Geometries.geometry;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * A random pull between a consumer rank (local) and the source ranks of a producer engine, with
 * block contents derived from what a model would put there: byte {@code k} of token {@code t} of
 * head {@code h} of layer {@code e} in the {@code j}-th producer block of group {@code g}. Blocks are
 * heads-outermost ({@code [heads][tokens][bytes]}) for head-sharded regions and {@code [tokens][bytes]}
 * for replicated latents, so a rank's content follows from its tensor-parallel rank alone.
 */
final class PlanScenario
{
    static final int REMOTE_TOKENS = 2;
    static final int HEAD_BYTES = 2;
    static final int LATENT_BYTES = 6;

    final int kvHeads;
    final int localTp;
    final int remoteTp;
    final int ratio;
    final long seed;
    final CacheGeometry local;
    final TransferPlan plan;
    final List<CacheGeometry> sources = new ArrayList<>();
    final int[][] localIds;
    final int[][] remoteIds;
    final SplitClass[] splits;
    final int[] regionGroups;

    PlanScenario(int kvHeads, int localTp, int remoteTp, int ratio, int regions, int groups, long seed)
    {
        Random random = new Random(seed);
        this.seed = seed;
        this.kvHeads = kvHeads;
        this.localTp = localTp;
        this.remoteTp = remoteTp;
        int localRank = random.nextInt(localTp);
        splits = new SplitClass[regions];
        regionGroups = new int[regions];
        boolean anySplit = false;
        for (int r = 0; r < regions; r++) {
            splits[r] = random.nextInt(10) < 7 ? SplitClass.SPLIT : SplitClass.REPLICATE;
            anySplit |= splits[r] == SplitClass.SPLIT;
            regionGroups[r] = random.nextInt(groups + 1) - 1;
        }
        // several head sources and split blocks do not mix (checked by PlanValidationTest)
        this.ratio = anySplit && localTp < remoteTp ? 1 : ratio;
        int[] localCapacities = new int[regions];
        int[] remoteCapacities = new int[regions];
        long[] localPads = new long[regions];
        long[] remotePads = new long[regions];
        for (int r = 0; r < regions; r++) {
            localCapacities[r] = 1 + random.nextInt(6);
            remoteCapacities[r] = 1 + random.nextInt(8);
            localPads[r] = 8L * random.nextInt(4);
            remotePads[r] = 8L * random.nextInt(4);
        }
        local = build(localRank, localTp, this.ratio * REMOTE_TOKENS, groups, localCapacities, localPads, 0x10000);
        plan = TransferPlan.pair(local, build(plan0Source(localRank), remoteTp, REMOTE_TOKENS, groups, remoteCapacities, remotePads, base(0)));
        for (int source : plan.tpPlan().sources()) {
            sources.add(build(source, remoteTp, REMOTE_TOKENS, groups, remoteCapacities, remotePads, base(source)));
        }

        localIds = new int[groups][];
        remoteIds = new int[groups][];
        List<Integer> localPool = shuffled(max(localCapacities), random);
        List<Integer> remotePool = shuffled(max(remoteCapacities), random);
        for (int g = 0; g < groups; g++) {
            if (!plan.serves(g)) {
                // no region holds the group: its ids would not move, and a plan refuses them
                localIds[g] = new int[0];
                remoteIds[g] = new int[0];
                continue;
            }
            int localLimit = limit(localCapacities, g);
            int remoteLimit = limit(remoteCapacities, g);
            List<Integer> remoteChoice = take(remotePool, remoteLimit, random.nextInt(remoteLimit + 1));
            int producerBlocks = remoteChoice.size();
            int consumerMax = (producerBlocks + this.ratio - 1) / this.ratio;
            List<Integer> localChoice = take(localPool, localLimit, random.nextInt(consumerMax + 1));
            remoteIds[g] = remoteChoice.stream().mapToInt(Integer::intValue).toArray();
            localIds[g] = localChoice.stream().mapToInt(Integer::intValue).toArray();
        }
    }

    private int plan0Source(int localRank)
    {
        // any rank of the producer serves to pair shapes; use the first rank this one handshakes with
        return TpPlan.compute(localRank, localTp, remoteTp, kvHeads, false).handshakeTargets().getFirst();
    }

    private static long base(int remoteRank)
    {
        return 0x1000000L * (remoteRank + 1);
    }

    private CacheGeometry build(int rank, int tp, int blockTokens, int groups, int[] capacities, long[] pads, long firstBase)
    {
        int heads = Math.max(1, kvHeads / tp);
        Geometries builder = geometry(kvHeads, rank, tp).blockTokens(blockTokens);
        for (int g = 0; g < groups; g++) {
            builder.group(g == 0 ? GroupKind.FULL_ATTENTION : GroupKind.SLIDING_WINDOW);
        }
        long base = firstBase;
        for (int r = 0; r < capacities.length; r++) {
            long blockBytes = splits[r] == SplitClass.SPLIT ? (long) heads * blockTokens * HEAD_BYTES : (long) blockTokens * LATENT_BYTES;
            long stride = blockBytes + pads[r];
            builder.region(base, blockBytes, stride, capacities[r], regionGroups[r], splits[r]);
            base += stride * capacities[r] + 64;
        }
        return builder.build();
    }

    private int limit(int[] capacities, int group)
    {
        int limit = Integer.MAX_VALUE;
        for (int r = 0; r < capacities.length; r++) {
            if (regionGroups[r] == group || regionGroups[r] < 0) {
                limit = Math.min(limit, capacities[r]);
            }
        }
        return limit == Integer.MAX_VALUE ? max(capacities) : limit;
    }

    private static int max(int[] values)
    {
        int max = 0;
        for (int value : values) {
            max = Math.max(max, value);
        }
        return max;
    }

    private static List<Integer> shuffled(int size, Random random)
    {
        List<Integer> pool = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            pool.add(i);
        }
        Collections.shuffle(pool, random);
        return pool;
    }

    /** Takes up to {@code wanted} distinct ids below {@code limit} out of the pool, so no two groups share a block. */
    private static List<Integer> take(List<Integer> pool, int limit, int wanted)
    {
        List<Integer> chosen = new ArrayList<>();
        for (int i = 0; i < pool.size() && chosen.size() < wanted; ) {
            if (pool.get(i) < limit) {
                chosen.add(pool.remove(i));
            }
            else {
                i++;
            }
        }
        return chosen;
    }

    /** Runs the block id pipeline of a pull: kernel expansion, ratio split of the consumer's blocks, end-trim of the producer's. */
    BlockSelection[] selections()
    {
        BlockSelection localBlocks = BlockSelection.of(localIds).expandToKernel(1);
        BlockSelection remoteBlocks = BlockSelection.of(remoteIds).expandToKernel(1);
        plan.alignBlocks(localBlocks, remoteBlocks);
        return new BlockSelection[] {localBlocks, remoteBlocks};
    }

    static byte content(int layer, int group, int head, int chunk, int token, int index)
    {
        long mixed = (((layer * 31L + group) * 131 + head) * 1031 + chunk) * 17 + token;
        mixed = mixed * 0x9E3779B97F4A7C15L + index;
        mixed ^= mixed >>> 29;
        mixed *= 0xBF58476D1CE4E5B9L;
        return (byte) (mixed ^ (mixed >>> 32));
    }

    int globalHead(int rank, int tp, int head)
    {
        return kvHeads >= tp ? rank * (kvHeads / tp) + head : rank * kvHeads / tp;
    }

    /** Writes every producer block of the request with its content and everything else with noise. */
    void fillProducers(SimulatedMemory memory, Random noise)
    {
        for (CacheGeometry source : sources) {
            for (Region region : source.regions()) {
                for (long address = region.base(); address < region.end(); address++) {
                    memory.put(address, (byte) noise.nextInt());
                }
            }
            for (int e = 0; e < source.regions().size(); e++) {
                Region region = source.regions().get(e);
                for (int g : groupsOf(e)) {
                    for (int j = 0; j < remoteIds[g].length; j++) {
                        writeBlock(memory, region.base() + remoteIds[g][j] * region.stride(), 0, REMOTE_TOKENS, e, g, j, source.rank().tpRank(), remoteTp);
                    }
                }
            }
        }
    }

    /** Returns the consumer memory a correct transfer produces: request blocks filled, everything else zero. */
    SimulatedMemory expectedConsumer()
    {
        SimulatedMemory expected = new SimulatedMemory();
        expected.add(local);
        for (int e = 0; e < local.regions().size(); e++) {
            Region region = local.regions().get(e);
            for (int g : groupsOf(e)) {
                // a consumer that skipped whole blocks of its own skipped ratio producer blocks each
                int held = remoteIds[g].length;
                int moved = held - ((held + ratio - 1) / ratio - localIds[g].length) * ratio;
                int skip = held - moved;
                for (int q = 0; q < moved; q++) {
                    long address = region.base() + localIds[g][q / ratio] * region.stride();
                    writeBlock(expected, address, q % ratio, ratio * REMOTE_TOKENS, e, g, skip + q, local.rank().tpRank(), localTp);
                }
            }
        }
        return expected;
    }

    /**
     * Writes one producer block's tokens as sub-block {@code sub} of a block that holds
     * {@code ratio} of them: heads outermost for head-sharded blocks (each head's tokens
     * contiguous), tokens outermost for latent ones.
     */
    private void writeBlock(SimulatedMemory memory, long address, int sub, int blockTokens, int layer, int group, int chunk, int rank, int tp)
    {
        boolean split = splits[layer] == SplitClass.SPLIT;
        int heads = split ? Math.max(1, kvHeads / tp) : 1;
        int bytes = split ? HEAD_BYTES : LATENT_BYTES;
        for (int h = 0; h < heads; h++) {
            int head = split ? globalHead(rank, tp, h) : 0;
            for (int t = 0; t < REMOTE_TOKENS; t++) {
                long token = (long) sub * REMOTE_TOKENS + t;
                long at = address + (split ? (long) h * blockTokens * bytes + token * bytes : token * bytes);
                for (int k = 0; k < bytes; k++) {
                    memory.put(at + k, content(layer, group, head, chunk, t, k));
                }
            }
        }
    }

    int[] groupsOf(int region)
    {
        if (regionGroups[region] >= 0) {
            return new int[] {regionGroups[region]};
        }
        int[] all = new int[localIds.length];
        for (int g = 0; g < all.length; g++) {
            all[g] = g;
        }
        return all;
    }

    @Override
    public String toString()
    {
        return "PlanScenario[seed=" + seed + " kvHeads=" + kvHeads + " localTp=" + localTp + " remoteTp=" + remoteTp + " ratio=" + ratio + " " + plan + "]";
    }
}
