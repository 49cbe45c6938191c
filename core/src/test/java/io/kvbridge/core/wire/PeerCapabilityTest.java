package io.kvbridge.core.wire;

import static io.kvbridge.core.wire.PeerCapability.DECODE_PIPELINE_PARALLEL;
import static io.kvbridge.core.wire.PeerCapability.LAYER_NAME_ROUTING;
import static io.kvbridge.core.wire.PeerCapability.PACKED_MLA;
import static io.kvbridge.core.wire.PeerCapability.PULL;
import static io.kvbridge.core.wire.PeerCapability.PUSH;
import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.kvbridge.spi.ErrorCode;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

final class PeerCapabilityTest
{
    @Test
    void aProducerServingBothModesPairsWithEitherConsumer()
    {
        Set<PeerCapability> producer = EnumSet.of(PUSH, PULL, PACKED_MLA, LAYER_NAME_ROUTING);
        assertEquals(Set.of(PULL), PeerCapability.negotiate(producer, EnumSet.of(PULL), "consumer"));
        assertEquals(Set.of(PUSH, LAYER_NAME_ROUTING), PeerCapability.negotiate(producer, EnumSet.of(PUSH, LAYER_NAME_ROUTING), "consumer"));
        assertEquals(Set.of(PUSH, PULL, PACKED_MLA), PeerCapability.negotiate(EnumSet.of(PUSH, PULL, PACKED_MLA, DECODE_PIPELINE_PARALLEL),
                producer, "producer"));
    }

    @Test
    void failsWithoutACommonTransferMode()
    {
        assertError(ErrorCode.HANDSHAKE_FAILED, () -> PeerCapability.negotiate(EnumSet.of(PUSH, PACKED_MLA), EnumSet.of(PULL, PACKED_MLA), "engine p"),
                "no common transfer mode with engine p: local=[push, packed-mla] remote=[pull, packed-mla]");
        assertError(ErrorCode.HANDSHAKE_FAILED, () -> PeerCapability.negotiate(Set.of(), EnumSet.of(PULL), "engine p"), "local=[] remote=[pull]");
    }

    @Test
    void mapsWireNamesBothWays()
    {
        for (PeerCapability capability : PeerCapability.values()) {
            assertEquals(capability, PeerCapability.fromWireName(capability.wireName()));
        }
        assertNull(PeerCapability.fromWireName("teleport"));
        assertEquals(java.util.List.of("push", "pull", "decode-pp"), PeerCapability.wireNames(Set.of(DECODE_PIPELINE_PARALLEL, PULL, PUSH)));
    }
}
