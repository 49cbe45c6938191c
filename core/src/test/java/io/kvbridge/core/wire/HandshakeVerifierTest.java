package io.kvbridge.core.wire;

import static io.kvbridge.core.wire.Trees.assertError;
import static io.kvbridge.core.wire.Trees.encode;
import static io.kvbridge.core.wire.Trees.set;
import static io.kvbridge.core.wire.Trees.tree;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

@Timeout(30)
final class HandshakeVerifierTest
{
    private static final ModelIdentity LOCAL = TestingGeometries.identity(4);

    private static CacheGeometry remote(ModelIdentity identity, Rank rank, int blockTokens)
    {
        CacheGeometry base = TestingGeometries.perLayer(4, rank);
        return new CacheGeometry(base.layoutName(), rank, identity, blockTokens, base.kernelBlocksPerLogical(), base.groups(), base.allocations(),
                base.regions());
    }

    private static byte[] payload(CacheGeometry geometry)
    {
        return HandshakePayload.of(TestingGeometries.metadata("remote", geometry)).encode();
    }

    static Stream<Arguments> identityDifferences()
    {
        return Stream.of(
                Arguments.of("model", new ModelIdentity("test-org/other-4", "bfloat16", "bfloat16", 8, 128, 4, false)),
                Arguments.of("dtype", new ModelIdentity("test-org/dense-4", "float16", "bfloat16", 8, 128, 4, false)),
                Arguments.of("cache dtype", new ModelIdentity("test-org/dense-4", "bfloat16", "fp8_e4m3", 8, 128, 4, false)),
                Arguments.of("KV heads", new ModelIdentity("test-org/dense-4", "bfloat16", "bfloat16", 16, 128, 4, false)),
                Arguments.of("head size", new ModelIdentity("test-org/dense-4", "bfloat16", "bfloat16", 8, 64, 4, false)),
                Arguments.of("layer count", new ModelIdentity("test-org/dense-4", "bfloat16", "bfloat16", 8, 128, 5, false)),
                Arguments.of("HMA", new ModelIdentity("test-org/dense-4", "bfloat16", "bfloat16", 8, 128, 4, true)));
    }

    @ParameterizedTest(name = "differing {0}")
    @MethodSource("identityDifferences")
    void strictModeRejectsADifferingIdentityWithBothHashes(String difference, ModelIdentity remoteIdentity)
    {
        HandshakeVerifier verifier = new HandshakeVerifier(LOCAL, CompatibilityMode.STRICT, WireLimits.DEFAULT);
        byte[] bytes = payload(remote(remoteIdentity, Rank.single(), 16));
        assertError(ErrorCode.COMPATIBILITY_MISMATCH, () -> verifier.verify(bytes), "compatibility hash mismatch",
                "local=" + CompatibilityHash.of(LOCAL), "remote=" + CompatibilityHash.of(remoteIdentity),
                "local identity: " + CompatibilityHash.factorsJson(LOCAL), "remote identity: " + CompatibilityHash.factorsJson(remoteIdentity));
    }

    @Test
    void acceptsDifferingBlockSizeTensorParallelismCapacitiesAndLayout()
    {
        HandshakeVerifier verifier = new HandshakeVerifier(LOCAL, CompatibilityMode.STRICT, WireLimits.DEFAULT);
        CacheGeometry otherBlockSize = remote(LOCAL, Rank.single(), 64);
        assertEquals(otherBlockSize, verifier.verify(payload(otherBlockSize)).metadata().geometry());
        CacheGeometry otherTp = remote(LOCAL, new Rank(0, 1, 3, 4), 16);
        assertEquals(otherTp, verifier.verify(payload(otherTp)).metadata().geometry());
        CacheGeometry otherLayout = TestingGeometries.perLayer(3, Rank.single());
        otherLayout = new CacheGeometry("some-other-layout", otherLayout.rank(), LOCAL, 32, 4, otherLayout.groups(), otherLayout.allocations(),
                otherLayout.regions());
        assertEquals(otherLayout, verifier.verify(payload(otherLayout)).metadata().geometry());
    }

    @Test
    void lenientModeAcceptsADifferingModel()
    {
        ModelIdentity renamed = new ModelIdentity("test-org/same-weights-other-name", "bfloat16", "bfloat16", 8, 128, 4, false);
        CacheGeometry geometry = remote(renamed, Rank.single(), 16);
        HandshakeVerifier.Verified verified = new HandshakeVerifier(LOCAL, CompatibilityMode.LENIENT, WireLimits.DEFAULT).verify(payload(geometry));
        assertEquals(geometry, verified.metadata().geometry());
        assertEquals(renamed, verified.geometry().geometry().model());
    }

    @Test
    void checksTheHashBeforeDecodingTheMetadata()
    {
        // the metadata is garbage: a strict mismatch must be reported, not a decode error
        ModelIdentity other = new ModelIdentity("test-org/other", "bfloat16", "bfloat16", 8, 128, 4, false);
        byte[] garbage = {(byte) 0xc1, 1, 2, 3};
        byte[] mismatched = new HandshakePayload(HandshakePayload.WIRE_VERSION, CompatibilityHash.of(other), garbage).encode();
        HandshakeVerifier verifier = new HandshakeVerifier(LOCAL, CompatibilityMode.STRICT, WireLimits.DEFAULT);
        assertError(ErrorCode.COMPATIBILITY_MISMATCH, () -> verifier.verify(mismatched), "compatibility hash mismatch", "remote identity: unreadable metadata");

        byte[] matching = new HandshakePayload(HandshakePayload.WIRE_VERSION, CompatibilityHash.of(LOCAL), garbage).encode();
        assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify(matching), "peer metadata is not valid msgpack");
    }

    @Test
    void rejectsAHashThatDoesNotMatchTheAdvertisedIdentity()
    {
        // a peer claiming our hash while advertising another identity is inconsistent, even in lenient mode
        ModelIdentity other = new ModelIdentity("test-org/other", "bfloat16", "bfloat16", 8, 128, 4, false);
        byte[] metadata = MetadataCodec.encode(TestingGeometries.metadata("remote", remote(other, Rank.single(), 16)));
        byte[] forged = new HandshakePayload(HandshakePayload.WIRE_VERSION, CompatibilityHash.of(LOCAL), metadata).encode();
        for (CompatibilityMode mode : CompatibilityMode.values()) {
            HandshakeVerifier verifier = new HandshakeVerifier(LOCAL, mode, WireLimits.DEFAULT);
            assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify(forged), "does not match the hash", "test-org/other");
        }
    }

    @Test
    void rejectsMalformedOuterPayloads()
    {
        HandshakeVerifier verifier = new HandshakeVerifier(LOCAL, CompatibilityMode.STRICT, WireLimits.DEFAULT);
        Map<String, Object> valid = Map.of("wire_version", 3L, "compatibility_hash", CompatibilityHash.of(LOCAL), "metadata", new byte[] {1});
        assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify("not msgpack at all".getBytes(java.nio.charset.StandardCharsets.US_ASCII)),
                "handshake payload");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify(encode(edit(valid, "wire_version", 99L))),
                "wire_version=99 is not supported (this engine reads 3..3)");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify(encode(edit(valid, "wire_version", "2"))),
                "handshake payload field wire_version: expected an integer");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify(encode(edit(valid, "compatibility_hash", "abc"))),
                "field compatibility_hash: value=abc is not 64 lower-case hex characters");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify(encode(edit(valid, "metadata", "text"))),
                "field metadata: expected binary, got a string");
        assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify(encode(edit(valid, "metadata", Trees.REMOVE))),
                "field metadata: required field is missing");
    }

    @Test
    void mapsUntrustedGeometryChecksToProtocolErrors()
    {
        // 5 member layers for a model of 4: every record is valid, the peer geometry view is not
        CacheGeometry geometry = TestingGeometries.perLayer(5, Rank.single());
        Map<String, Object> tree = tree(TestingGeometries.metadata("remote", geometry));
        set(tree, "model.layer_count", 4L);
        set(tree, "model.model", LOCAL.model());
        byte[] metadata = encode(tree);
        byte[] bytes = new HandshakePayload(HandshakePayload.WIRE_VERSION, CompatibilityHash.of(LOCAL), metadata).encode();
        HandshakeVerifier verifier = new HandshakeVerifier(LOCAL, CompatibilityMode.STRICT, WireLimits.DEFAULT);
        assertError(ErrorCode.PROTOCOL_ERROR, () -> verifier.verify(bytes), "peer metadata field regions is invalid",
                "the regions hold 5 layers but the model has layerCount=4");
    }

    private static Map<String, Object> edit(Map<String, Object> map, String key, Object value)
    {
        Map<String, Object> copy = new java.util.LinkedHashMap<>(map);
        return set(copy, key, value);
    }
}
