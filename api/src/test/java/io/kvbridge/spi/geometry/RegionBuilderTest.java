package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** {@link Region#builder}: the named form builds what the constructor builds and names what is missing. */
final class RegionBuilderTest
{
    /** Every required value set; each test takes one away or adds an option. */
    private static RegionBuilder complete()
    {
        return Region.builder("l0").base(0x10000).blockBytes(64).capacity(8).group(0).host().split(SplitClass.SPLIT).members("l0");
    }

    @Test
    void buildsWhatTheConstructorBuilds()
    {
        assertEquals(new Region("l0", 0x10000, 64, 64, 8, 0, MemoryKind.HOST, 0, SplitClass.SPLIT, List.of("l0"), List.of()), complete().build());
        assertEquals(new Region("l0/k", 0x20000, 32, 128, 4, -1, MemoryKind.DEVICE, 3, SplitClass.REPLICATE, List.of("l0", "l1"), List.of(), KvPart.KEY),
                Region.builder("l0/k").base(0x20000).blockBytes(32).stride(128).capacity(4).group(-1).device(3).split(SplitClass.REPLICATE)
                        .members(List.of("l0", "l1")).part(KvPart.KEY).build());
        List<PackedMember> pages = List.of(new PackedMember("l0", 0, 32), new PackedMember("l1", 32, 32));
        List<BlockRun> runs = List.of(new BlockRun(0x10000, 2), new BlockRun(0x40000, 3));
        assertEquals(new Region("packed", 0x10000, 64, 64, 5, 1, MemoryKind.HOST, 0, SplitClass.INTERLEAVED, List.of("l0", "l1"), pages, KvPart.JOINT, runs),
                Region.builder("packed").base(0x10000).blockBytes(64).capacity(5).group(1).host().split(SplitClass.INTERLEAVED).members("l0", "l1")
                        .packedMembers(pages).runs(runs).build());
    }

    @Test
    void theLastMemoryPlacementWins()
    {
        assertEquals(MemoryKind.HOST, complete().device(2).host().build().memoryKind());
        assertEquals(0, complete().device(2).host().build().device());
        assertEquals(2, complete().host().device(2).build().device());
    }

    @Test
    void refusesEachMissingRequiredValueNamingIt()
    {
        assertMissing("base", () -> Region.builder("l0").blockBytes(64).capacity(8).group(0).host().split(SplitClass.SPLIT).members("l0"));
        assertMissing("blockBytes", () -> Region.builder("l0").base(0x10000).capacity(8).group(0).host().split(SplitClass.SPLIT).members("l0"));
        assertMissing("capacity", () -> Region.builder("l0").base(0x10000).blockBytes(64).group(0).host().split(SplitClass.SPLIT).members("l0"));
        assertMissing("group", () -> Region.builder("l0").base(0x10000).blockBytes(64).capacity(8).host().split(SplitClass.SPLIT).members("l0"));
        assertMissing("memory", () -> Region.builder("l0").base(0x10000).blockBytes(64).capacity(8).group(0).split(SplitClass.SPLIT).members("l0"));
        assertMissing("split", () -> Region.builder("l0").base(0x10000).blockBytes(64).capacity(8).group(0).host().members("l0"));
        assertMissing("members", () -> Region.builder("l0").base(0x10000).blockBytes(64).capacity(8).group(0).host().split(SplitClass.SPLIT));
    }

    @Test
    void refusesWhatTheRecordRefusesWithItsMessage()
    {
        KvBridgeException overlap = assertThrows(KvBridgeException.class, () -> complete().stride(32).build());
        assertEquals(ErrorCode.INVALID_ARGUMENT, overlap.code());
        assertEquals("KVB/InvalidArgument: region l0: stride=32 is smaller than blockBytes=64 (blocks would overlap)", overlap.getMessage());
        KvBridgeException noMembers = assertThrows(KvBridgeException.class,
                () -> Region.builder("l0").base(0x10000).blockBytes(64).capacity(8).group(0).host().split(SplitClass.SPLIT).members().build());
        assertEquals("KVB/InvalidArgument: region l0 has no member layers", noMembers.getMessage());
        assertThrows(KvBridgeException.class, () -> complete().device(-1).build());
    }

    private static void assertMissing(String field, Supplier<RegionBuilder> partial)
    {
        KvBridgeException missing = assertThrows(KvBridgeException.class, () -> partial.get().build());
        assertEquals(ErrorCode.INVALID_ARGUMENT, missing.code());
        assertTrue(missing.getMessage().startsWith("KVB/InvalidArgument: region l0: " + field + " is not set (expected: ."), missing.getMessage());
    }
}
