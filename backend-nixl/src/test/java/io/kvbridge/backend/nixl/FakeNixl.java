package io.kvbridge.backend.nixl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.testkit.NativeFakes;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The test-only controls of the fake {@code libnixl_capi.so} the build compiles from
 * {@code src/test/c}: fault injection, completion modes and leak counters. They are extra symbols
 * of the fake; real NIXL has none of them.
 */
public final class FakeNixl
{
    /** The current C API (102 functions). */
    public static final FakeNixl HEAD = new FakeNixl("kvbridge.nixl.test.fake");
    /** The 96-function C API of NIXL 0.10.1 .. 1.4, with its statuses. */
    public static final FakeNixl V1_4 = new FakeNixl("kvbridge.nixl.test.fake14");

    private static final Map<Path, SymbolLookup> LOOKUPS = new ConcurrentHashMap<>();
    private static final StructLayout STATS = MemoryLayout.structLayout(
            JAVA_LONG.withName("live_agents"), JAVA_LONG.withName("live_requests"), JAVA_LONG.withName("live_prepared"),
            JAVA_LONG.withName("live_objects"), JAVA_LONG.withName("bad_handles"), JAVA_LONG.withName("notifications_sent"),
            JAVA_LONG.withName("transfers_posted"), JAVA_LONG.withName("frames_sent"));

    /** The system property the build sets to this fake's path. */
    private final String property;

    /**
     * The fake's counters.
     *
     * @param liveAgents agents not destroyed.
     * @param liveRequests transfer requests not destroyed.
     * @param livePrepared prepared lists not released.
     * @param liveObjects other objects (lists, maps, options, params, backend wrappers) not destroyed.
     * @param badHandles calls that used a stale or wrong handle, or broke a NIXL rule the fake checks.
     * @param notificationsSent notifications queued at a target.
     * @param transfersPosted successful posts.
     * @param framesSent socket frames sent between processes.
     */
    public record Stats(long liveAgents, long liveRequests, long livePrepared, long liveObjects, long badHandles, long notificationsSent, long transfersPosted,
            long framesSent)
    {
    }

    private FakeNixl(String property)
    {
        this.property = property;
    }

    /**
     * The fake's path. Every use of the fake goes through here, so that a test run where the build
     * skipped the fakes (no gcc) skips each test that needs one, with the reason {@link NativeFakes} gives.
     *
     * @return the compiled fake.
     */
    public Path library()
    {
        return NativeFakes.require(property);
    }

    /** A factory bound to this fake, with the fake allowed. */
    NixlBackendFactory factory()
    {
        return new NixlBackendFactory(library().toString(), true);
    }

    /** Options that select this fake. */
    Map<String, String> options()
    {
        // the fake stands for NIXL's UCX backend, whose tcp lane the user accepts like every test of it
        return Map.of("library", library().toString(), "allow-fake", "true", NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE, "true");
    }

    private MethodHandle handle(String name, FunctionDescriptor descriptor)
    {
        SymbolLookup lookup = LOOKUPS.computeIfAbsent(library(), path -> SymbolLookup.libraryLookup(path, Arena.global()));
        return Linker.nativeLinker().downcallHandle(lookup.find(name).orElseThrow(), descriptor);
    }

    /** Fails the nth next call of a C API function (name without the nixl_capi_ prefix) with a status. */
    public void failNth(String function, int nth, int status)
    {
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) handle("nixl_fake_set_fault", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT))
                    .invokeExact(arena.allocateFrom(function), nth, status);
            assertEquals(0, rc, "nixl_fake_set_fault(" + function + ")");
        }
        catch (RuntimeException e) {
            // a skip where the fake was not built (TestAbortedException) stays a skip
            throw e;
        }
        catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    public void resetFaults()
    {
        try {
            handle("nixl_fake_reset_faults", FunctionDescriptor.ofVoid()).invokeExact();
        }
        catch (RuntimeException e) {
            // a skip where the fake was not built (TestAbortedException) stays a skip
            throw e;
        }
        catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Sets a fake option: completion (async, inline, polls:N), api (head, 1.4), vram_as_host (0, 1), merge (runs, address). */
    public void option(String key, String value)
    {
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) handle("nixl_fake_set_option", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS))
                    .invokeExact(arena.allocateFrom(key), arena.allocateFrom(value));
            assertEquals(0, rc, "nixl_fake_set_option(" + key + ", " + value + ")");
        }
        catch (RuntimeException e) {
            // a skip where the fake was not built (TestAbortedException) stays a skip
            throw e;
        }
        catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    public Stats stats()
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(STATS);
            int rc = (int) handle("nixl_fake_stats", FunctionDescriptor.of(JAVA_INT, ADDRESS)).invokeExact(out);
            assertEquals(0, rc);
            return new Stats(out.get(JAVA_LONG, 0), out.get(JAVA_LONG, 8), out.get(JAVA_LONG, 16), out.get(JAVA_LONG, 24), out.get(JAVA_LONG, 32),
                    out.get(JAVA_LONG, 40), out.get(JAVA_LONG, 48), out.get(JAVA_LONG, 56));
        }
        catch (RuntimeException e) {
            // a skip where the fake was not built (TestAbortedException) stays a skip
            throw e;
        }
        catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Asserts that nothing native is left and no rule was broken since {@code before}. */
    public void assertNothingLeft(Stats before)
    {
        Stats now = stats();
        assertEquals(0, now.liveAgents(), () -> "agents left: " + now);
        assertEquals(0, now.liveRequests(), () -> "transfer requests left: " + now);
        assertEquals(0, now.livePrepared(), () -> "prepared lists left: " + now);
        assertEquals(0, now.liveObjects(), () -> "lists, maps, options or params left: " + now);
        assertEquals(before.badHandles(), now.badHandles(), () -> "the binding used a stale handle or broke a NIXL rule (see the fake's stderr): " + now);
    }
}
