package io.kvbridge.core.sidechannel;

import static io.kvbridge.core.sidechannel.FramesTest.LIMIT;
import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.wire.AllocationMeter;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.function.Executable;

/** Frames, requests and replies from hostile peers: only the typed protocol error escapes. */
final class SideChannelFuzzTest
{
    @Property(tries = 300)
    void refusesEveryLengthAboveTheLimitWithoutAllocating(@ForAll @LongRange(min = LIMIT + 1L, max = 0xffff_ffffL) long length)
    {
        byte[] header = ByteBuffer.allocate(4).putInt((int) length).array();
        long before = AllocationMeter.allocatedBytes();
        assertError(ErrorCode.PROTOCOL_ERROR, () -> Frames.read(new ByteArrayInputStream(header), LIMIT, "reply"), "length=" + length);
        long allocated = AllocationMeter.allocatedBytes() - before;
        assertTrue(allocated < 1 << 20, "refusing length=" + length + " allocated " + allocated + " bytes");
    }

    @Property(tries = 1_000)
    void randomFramesRaiseOnlyProtocolErrors(@ForAll @Size(max = 96) byte[] bytes)
    {
        onlyProtocolErrors(() -> Frames.read(new ByteArrayInputStream(bytes), 64, "request"));
        onlyProtocolErrors(() -> SideChannelMessages.decodeRequest(bytes, WireLimits.DEFAULT));
        onlyProtocolErrors(() -> SideChannelMessages.decodeReply(bytes, WireLimits.DEFAULT));
    }

    @Property(tries = 1_000)
    void mutatedRequestsAndRepliesRaiseOnlyProtocolErrors(@ForAll @IntRange(min = 0, max = 40) int at, @ForAll byte value,
            @ForAll @IntRange(min = 0, max = 40) int cut)
    {
        for (byte[] valid : List.of(SideChannelMessages.request(new RankKey(1, 3)), SideChannelMessages.okReply(new byte[] {1, 2, 3}, 99),
                SideChannelMessages.errorReply(ErrorCode.PEER_UNKNOWN, "no such rank"))) {
            byte[] mutated = valid.clone();
            mutated[at % mutated.length] = value;
            byte[] truncated = Arrays.copyOf(mutated, Math.max(1, mutated.length - cut));
            onlyProtocolErrors(() -> SideChannelMessages.decodeRequest(truncated, WireLimits.DEFAULT));
            onlyProtocolErrors(() -> SideChannelMessages.decodeReply(truncated, WireLimits.DEFAULT));
        }
    }

    private static void onlyProtocolErrors(Executable action)
    {
        try {
            action.execute();
        }
        catch (KvBridgeException e) {
            if (e.code() != ErrorCode.PROTOCOL_ERROR) {
                throw new AssertionError("escaped with " + e.code(), e);
            }
        }
        catch (Throwable e) {
            throw new AssertionError("escaped with " + e, e);
        }
    }
}
