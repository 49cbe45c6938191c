package io.kvbridge.core.wire;

import static io.kvbridge.core.wire.Trees.encode;
import static io.kvbridge.core.wire.Trees.tree;

import io.kvbridge.core.wire.MessageAuthenticator.Direction;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;

/**
 * Feeds the decoders random bytes, mutated valid messages and valid msgpack of the wrong shape:
 * whatever the input, the only failure that may escape is the typed one.
 */
final class WireDecoderFuzzTest
{
    private static final byte[] SECRET = "fuzzing-secret-of-enough-bytes".getBytes(StandardCharsets.US_ASCII);
    private static final WireLimits LIMITS = WireLimits.DEFAULT;
    private static final List<CacheGeometry> GEOMETRIES = TestingGeometries.all();

    enum Kind
    {
        FLIP, SET, INSERT, DELETE, TRUNCATE, DUPLICATE
    }

    record Mutation(Kind kind, double position, int length, byte value)
    {
        byte[] apply(byte[] input)
        {
            if (input.length == 0) {
                return kind == Kind.INSERT ? new byte[] {value} : input;
            }
            int at = (int) (position * input.length);
            int end = Math.min(input.length, at + length);
            return switch (kind) {
                case FLIP -> {
                    byte[] copy = input.clone();
                    copy[at] ^= (byte) (1 << (value & 7));
                    yield copy;
                }
                case SET -> {
                    byte[] copy = input.clone();
                    copy[at] = value;
                    yield copy;
                }
                case INSERT -> {
                    byte[] copy = new byte[input.length + 1];
                    System.arraycopy(input, 0, copy, 0, at);
                    copy[at] = value;
                    System.arraycopy(input, at, copy, at + 1, input.length - at);
                    yield copy;
                }
                case DELETE -> {
                    byte[] copy = new byte[input.length - (end - at)];
                    System.arraycopy(input, 0, copy, 0, at);
                    System.arraycopy(input, end, copy, at, input.length - end);
                    yield copy;
                }
                case TRUNCATE -> Arrays.copyOf(input, at);
                case DUPLICATE -> {
                    byte[] copy = new byte[input.length + (end - at)];
                    System.arraycopy(input, 0, copy, 0, end);
                    System.arraycopy(input, at, copy, end, input.length - at);
                    yield copy;
                }
            };
        }
    }

    @Provide
    Arbitrary<List<Mutation>> mutations()
    {
        Arbitrary<Mutation> mutation = Combinators.combine(Arbitraries.of(Kind.class), Arbitraries.doubles().between(0, 1).filter(d -> d < 1),
                Arbitraries.integers().between(1, 64), Arbitraries.bytes()).as(Mutation::new);
        return mutation.list().ofMinSize(1).ofMaxSize(4);
    }

    @Provide
    Arbitrary<CacheGeometry> geometries()
    {
        return Arbitraries.of(GEOMETRIES);
    }

    @Provide
    Arbitrary<Object> values()
    {
        Arbitrary<Object> leaf = Arbitraries.oneOf(
                Arbitraries.strings().ofMaxLength(12).map(s -> (Object) s),
                Arbitraries.longs().map(l -> (Object) l),
                Arbitraries.of(-1L, 0L, 1L, (long) Integer.MAX_VALUE + 1, Long.MIN_VALUE).map(l -> (Object) l),
                Arbitraries.bytes().array(byte[].class).ofMaxSize(8).map(b -> (Object) b),
                Arbitraries.of(true, false).map(b -> (Object) b),
                Arbitraries.of("host", "device", "split", "replicate", "mla", "push").map(s -> (Object) s)).injectNull(0.05);
        return Arbitraries.lazyOf(
                () -> leaf,
                () -> leaf,
                () -> leaf,
                () -> values().list().ofMaxSize(3).map(list -> (Object) list),
                () -> Arbitraries.maps(Arbitraries.strings().alpha().ofMaxLength(6), values()).ofMaxSize(3).map(map -> (Object) map));
    }

    @Property(tries = 2_000)
    void randomBytesRaiseOnlyTypedErrors(@ForAll @Size(max = 256) byte[] bytes)
    {
        decodeEverywhere(bytes);
    }

    @Property(tries = 1_000)
    void randomBytesBehindAMapHeaderRaiseOnlyTypedErrors(@ForAll @Size(max = 256) byte[] tail, @ForAll("geometries") CacheGeometry geometry)
    {
        // starting with a map header gets past the first byte and into the field logic
        byte[] bytes = new byte[tail.length + 1];
        bytes[0] = (byte) 0x8c;
        System.arraycopy(tail, 0, bytes, 1, tail.length);
        decodeEverywhere(bytes);
    }

    @Property(tries = 1_000)
    void mutatedMetadataRaisesOnlyProtocolErrors(@ForAll("geometries") CacheGeometry geometry, @ForAll("mutations") List<Mutation> mutations)
    {
        RankMetadata metadata = TestingGeometries.metadata("engine-a", geometry);
        byte[] inner = mutate(MetadataCodec.encode(metadata), mutations);
        onlyTyped(() -> MetadataCodec.decode(inner, LIMITS), ErrorCode.PROTOCOL_ERROR);
        // the same damage behind a valid outer payload with a matching hash reaches the inner decoder
        HandshakeVerifier verifier = new HandshakeVerifier(geometry.model(), CompatibilityMode.STRICT, LIMITS);
        byte[] payload = new HandshakePayload(HandshakePayload.WIRE_VERSION, CompatibilityHash.of(geometry.model()), inner).encode();
        onlyTyped(() -> verifier.verify(payload), ErrorCode.PROTOCOL_ERROR);
        byte[] outer = mutate(HandshakePayload.of(metadata).encode(), mutations);
        onlyTyped(() -> verifier.verify(outer), ErrorCode.PROTOCOL_ERROR, ErrorCode.COMPATIBILITY_MISMATCH);
    }

    @Property(tries = 1_000)
    void wrongValuesAtAnyFieldRaiseOnlyProtocolErrors(@ForAll("geometries") CacheGeometry geometry, @ForAll("values") Object value,
            @ForAll double where)
    {
        Map<String, Object> tree = tree(TestingGeometries.metadata("engine-a", geometry));
        List<String> paths = new ArrayList<>();
        collectPaths(tree, "", paths);
        String path = paths.get((int) (Math.abs(where % 1) * paths.size()) % paths.size());
        Trees.set(tree, path, value);
        byte[] bytes = encode(tree);
        onlyTyped(() -> MetadataCodec.decode(bytes, LIMITS), ErrorCode.PROTOCOL_ERROR);
        HandshakeVerifier verifier = new HandshakeVerifier(geometry.model(), CompatibilityMode.LENIENT, LIMITS);
        byte[] payload = new HandshakePayload(HandshakePayload.WIRE_VERSION, CompatibilityHash.of(geometry.model()), bytes).encode();
        onlyTyped(() -> verifier.verify(payload), ErrorCode.PROTOCOL_ERROR);
    }

    @Property(tries = 500)
    void arbitraryMsgpackTreesRaiseOnlyTypedErrors(@ForAll("values") Object value)
    {
        decodeEverywhere(encode(value));
        decodeEverywhere(encode(Map.of("engine_id", "x", "rank", value == null ? "nil" : value, "regions", List.of(value == null ? 1L : value))));
    }

    @Property(tries = 500)
    void mutatedEnvelopesNeverAuthenticate(@ForAll("mutations") List<Mutation> mutations)
    {
        MessageAuthenticator sender = MessageAuthenticator.withSecret(SECRET, Duration.ofSeconds(30), 1_000, InstantSource.system(), LIMITS);
        MessageAuthenticator receiver = MessageAuthenticator.withSecret(SECRET, Duration.ofSeconds(30), 1_000, InstantSource.system(), LIMITS);
        byte[] content = "payload".getBytes(StandardCharsets.US_ASCII);
        byte[] envelope = sender.seal(Direction.REQUEST, content, new byte[0]).content();
        byte[] mutated = mutate(envelope, mutations);
        try {
            MessageAuthenticator.Opened opened = receiver.open(Direction.REQUEST, mutated, new byte[0]);
            // a mutation that left the authenticated fields intact (e.g. one re-encoding the same map) must yield the original
            if (!Arrays.equals(opened.content(), content)) {
                throw new AssertionError("a mutated envelope authenticated with altered content");
            }
        }
        catch (KvBridgeException e) {
            if (e.code() != ErrorCode.PROTOCOL_ERROR && e.code() != ErrorCode.AUTHENTICATION_FAILED) {
                throw new AssertionError("unexpected code " + e.code(), e);
            }
        }
    }

    private static void decodeEverywhere(byte[] bytes)
    {
        onlyTyped(() -> MetadataCodec.decode(bytes, LIMITS), ErrorCode.PROTOCOL_ERROR);
        onlyTyped(() -> HandshakePayload.decode(bytes, LIMITS), ErrorCode.PROTOCOL_ERROR);
        for (CompatibilityMode mode : CompatibilityMode.values()) {
            HandshakeVerifier verifier = new HandshakeVerifier(GEOMETRIES.getFirst().model(), mode, LIMITS);
            onlyTyped(() -> verifier.verify(bytes), ErrorCode.PROTOCOL_ERROR, ErrorCode.COMPATIBILITY_MISMATCH);
        }
        onlyTyped(() -> MessageAuthenticator.unauthenticated(LIMITS).open(Direction.REPLY, bytes, new byte[0]), ErrorCode.PROTOCOL_ERROR);
        MessageAuthenticator authenticated = MessageAuthenticator.withSecret(SECRET, Duration.ofSeconds(30), 100, InstantSource.system(), LIMITS);
        onlyTyped(() -> authenticated.open(Direction.REQUEST, bytes, new byte[0]), ErrorCode.PROTOCOL_ERROR, ErrorCode.AUTHENTICATION_FAILED);
    }

    private static void onlyTyped(Runnable action, ErrorCode... allowed)
    {
        try {
            action.run();
        }
        catch (KvBridgeException e) {
            if (!Set.of(allowed).contains(e.code())) {
                throw new AssertionError("escaped with " + e.code() + " (allowed: " + Arrays.toString(allowed) + ")", e);
            }
        }
    }

    private static byte[] mutate(byte[] bytes, List<Mutation> mutations)
    {
        byte[] result = bytes;
        for (Mutation mutation : mutations) {
            result = mutation.apply(result);
        }
        return result;
    }

    private static void collectPaths(Object value, String path, List<String> paths)
    {
        if (value instanceof Map<?, ?> map) {
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                String child = path.isEmpty() ? (String) entry.getKey() : path + "." + entry.getKey();
                paths.add(child);
                if (entry.getValue() instanceof Map<?, ?>) {
                    collectPaths(entry.getValue(), child, paths);
                }
                else if (entry.getValue() instanceof List<?> list) {
                    for (int i = 0; i < list.size(); i++) {
                        if (list.get(i) instanceof Map<?, ?>) {
                            collectPaths(list.get(i), child + "[" + i + "]", paths);
                        }
                    }
                }
            }
        }
    }
}
