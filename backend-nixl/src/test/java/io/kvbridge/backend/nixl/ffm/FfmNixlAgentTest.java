package io.kvbridge.backend.nixl.ffm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.backend.nixl.FakeLeakCheck;
import io.kvbridge.backend.nixl.FakeNixl;
import io.kvbridge.backend.nixl.NixlTestSupport;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.TransferOp;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The binding itself, below the transport: symbol resolution, both status dialects, the rules on
 * notifications and request lifetimes, checked against the fake library through FFM.
 */
@Timeout(60)
final class FfmNixlAgentTest
{
    private static final int BYTES = 4 * 4096;

    @RegisterExtension
    final FakeLeakCheck headLeaks = new FakeLeakCheck(FakeNixl.HEAD);
    @RegisterExtension
    final FakeLeakCheck v14Leaks = new FakeLeakCheck(FakeNixl.V1_4);

    private final List<NixlAgent> agents = new ArrayList<>();
    private final Arena arena = Arena.ofShared();

    @AfterEach
    void closeAll()
    {
        agents.forEach(NixlAgent::close);
        arena.close();
        for (FakeNixl fake : List.of(FakeNixl.HEAD, FakeNixl.V1_4)) {
            fake.resetFaults();
            fake.option("completion", "async");
        }
    }

    private NixlAgent open(FakeNixl fake, String role)
    {
        NixlAgent agent = Nixl.openAgent(fake.library(), role + "-" + UUID.randomUUID(), true);
        agents.add(agent);
        return agent;
    }

    private MemorySegment registered(NixlAgent agent, int seed)
    {
        MemorySegment memory = arena.allocate(BYTES, 4096);
        for (int i = 0; i < BYTES; i++) {
            memory.set(ValueLayout.JAVA_BYTE, i, (byte) (seed * 31 + i));
        }
        agent.registerMemory(MemoryKind.HOST, 0, memory.address(), memory.byteSize());
        return memory;
    }

    /** Two agents of the head fake, the target's memory known to the initiator, one list each side. */
    private record Pair(NixlAgent initiator, NixlAgent target, MemorySegment source, MemorySegment destination, String peer, long local, long remote)
    {
    }

    private Pair connectedPair()
    {
        NixlAgent initiator = open(FakeNixl.HEAD, "initiator");
        NixlAgent target = open(FakeNixl.HEAD, "target");
        MemorySegment source = registered(initiator, 1);
        MemorySegment destination = registered(target, 2);
        String peer = initiator.loadRemoteMetadata(target.localMetadata());
        assertEquals(target.name(), peer);
        long local = initiator.prepareLocal(MemoryKind.HOST, 0, new long[] {source.address()}, new long[] {BYTES}, 1);
        long remote = initiator.prepareRemote(peer, MemoryKind.HOST, 0, new long[] {destination.address()}, new long[] {BYTES}, 1);
        return new Pair(initiator, target, source, destination, peer, local, remote);
    }

    private static List<String> cApiFunctions() throws IOException
    {
        try (InputStream in = FfmNixlAgentTest.class.getResourceAsStream("/nixl-capi-functions.txt")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().filter(line -> line.startsWith("nixl_capi_")).toList();
        }
    }

    private static void assertCode(ErrorCode code, String fragment, org.junit.jupiter.api.function.Executable executable)
    {
        NixlTestSupport.assertFails(code, fragment, executable);
    }

    @Test
    void fakesExportTheWholeCApiOfTheirVersion() throws IOException
    {
        List<String> functions = cApiFunctions();
        assertEquals(102, functions.size());
        SymbolLookup head = SymbolLookup.libraryLookup(FakeNixl.HEAD.library(), Arena.global());
        SymbolLookup v14 = SymbolLookup.libraryLookup(FakeNixl.V1_4.library(), Arena.global());
        for (String function : functions) {
            assertTrue(head.find(function).isPresent(), function);
            assertEquals(!NixlLibrary.HEAD_ONLY.contains(function), v14.find(function).isPresent(), function);
        }
    }

    @Test
    void inspectTellsTheFakeAndItsApiLevel()
    {
        NixlLibraryReport head = Nixl.inspect(FakeNixl.HEAD.library());
        assertTrue(head.loaded(), head.problems()::toString);
        assertTrue(head.stub());
        assertTrue(head.fakeIdentity().orElseThrow().startsWith("nixl-capi-fake"));
        assertEquals(NixlApiLevel.HEAD, head.apiLevel().orElseThrow());
        assertEquals(NixlApiLevel.V1_4, Nixl.inspect(FakeNixl.V1_4.library()).apiLevel().orElseThrow());
        NixlPluginReport plugins = Nixl.plugins(FakeNixl.HEAD.library(), true);
        assertEquals(List.of("UCX"), plugins.plugins());
        assertEquals(Set.of(MemoryKind.HOST, MemoryKind.DEVICE), plugins.ucxMemory());
    }

    @Test
    void aUcxPluginThatCannotStartABackendIsAProblemOfTheListing()
    {
        // as NIXL 1.4.0's UCX plugin answers on a UCX built without multi-threading
        FakeNixl.HEAD.failNth("create_backend", 1, -2);
        NixlPluginReport plugins = Nixl.plugins(FakeNixl.HEAD.library(), true);
        assertEquals(List.of("UCX"), plugins.plugins());
        assertEquals(1, plugins.problems().size(), plugins.problems()::toString);
        assertTrue(plugins.problems().getFirst().contains("cannot start a backend (nixl_capi_create_backend returned -2")
                && plugins.problems().getFirst().contains("--enable-mt"), plugins.problems()::toString);
        assertTrue(Nixl.plugins(FakeNixl.HEAD.library(), true).problems().isEmpty(), "the next listing starts its backend");
    }

    @Test
    void libraryWithoutTheCApiIsRefusedNamingWhatIsMissing()
    {
        Path libm = Path.of("/lib/x86_64-linux-gnu/libm.so.6");
        assumeTrue(Files.isRegularFile(libm), "needs a shared library that is not NIXL; " + libm + " is absent");
        NixlLibraryReport report = Nixl.inspect(libm);
        assertFalse(report.loaded());
        assertTrue(report.problems().getFirst().contains("lacks required C API functions [nixl_capi_create_configured_agent"), report.problems()::toString);
    }

    @Test
    void fileThatIsNoLibraryIsRefusedWithTheLinkerHint() throws IOException
    {
        Path bogus = Files.createTempDirectory("nixl").resolve("libnixl_capi.so");
        Files.writeString(bogus, "not an ELF file");
        NixlLibraryReport report = Nixl.inspect(bogus);
        assertFalse(report.loaded());
        assertTrue(report.problems().getFirst().contains("the dynamic linker could not load"), report.problems()::toString);
    }

    @Test
    void notificationLeavesOnlyWhenTheInitiatorPollsTheTransferToCompletion()
    {
        FakeNixl.HEAD.option("completion", "polls:2");
        Pair pair = connectedPair();
        NixlAgent initiator = pair.initiator();
        NixlAgent target = pair.target();
        assertTrue(initiator.remoteMetadataLoaded(pair.peer()));
        long request = initiator.makeRequest(TransferOp.WRITE, pair.local(), new int[] {0}, pair.remote(), new int[] {0}, 1,
                "req-7".getBytes(StandardCharsets.UTF_8));
        assertFalse(initiator.postRequest(request));
        List<String> received = new ArrayList<>();
        for (int poll = 0; poll < 2; poll++) {
            assertEquals(0, target.drainNotifications((sender, message) -> received.add(sender)), "nothing before the initiator sees completion");
            assertFalse(initiator.pollRequest(request));
        }
        assertEquals(-1, pair.destination().mismatch(pair.source()), "the data is in place before the notification");
        assertTrue(initiator.pollRequest(request));
        assertEquals(1, target.drainNotifications((sender, message) -> {
            received.add(sender);
            assertArrayEquals("req-7".getBytes(StandardCharsets.UTF_8), message);
        }));
        assertEquals(List.of(initiator.name()), received);
        assertEquals(0, target.drainNotifications((sender, message) -> received.add("again")), "each notification is delivered once");
        assertTrue(initiator.releaseRequest(request));
        initiator.releasePrepared(pair.remote());
        initiator.releasePrepared(pair.local());
        assertTrue(initiator.invalidateRemoteMetadata(pair.peer()));
        assertFalse(initiator.invalidateRemoteMetadata(pair.peer()), "a forgotten peer is reported, not an error");
    }

    @Test
    void releasingARunningRequestCancelsItAndSendsNothing()
    {
        FakeNixl.HEAD.option("completion", "polls:1000");
        Pair pair = connectedPair();
        NixlAgent initiator = pair.initiator();
        long request = initiator.makeRequest(TransferOp.WRITE, pair.local(), new int[] {0}, pair.remote(), new int[] {0}, 1, new byte[] {1});
        assertFalse(initiator.postRequest(request));
        FakeNixl.HEAD.failNth("release_xfer_req", 1, -2);
        assertFalse(initiator.releaseRequest(request), "NIXL could not cancel yet: the request is kept");
        assertTrue(initiator.releaseRequest(request));
        assertEquals(0, pair.target().drainNotifications((sender, message) -> { }));
        assertEquals(0, FakeNixl.HEAD.stats().liveRequests());
        initiator.releasePrepared(pair.remote());
        initiator.releasePrepared(pair.local());
    }

    @Test
    void anAgentRefusesCallsFromOtherThreads() throws Exception
    {
        NixlAgent agent = open(FakeNixl.HEAD, "confined");
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread other = Thread.ofPlatform().start(() -> {
            try {
                agent.pollRequest(1);
            }
            catch (Throwable t) {
                thrown.set(t);
            }
        });
        other.join();
        assertTrue(thrown.get() instanceof IllegalStateException, () -> String.valueOf(thrown.get()));
        assertTrue(thrown.get().getMessage().contains("is confined to thread"), thrown.get()::getMessage);
    }

    @Test
    void headStatusesBecomePreciseErrors()
    {
        assertStatusesMapped(FakeNixl.HEAD, "-6 (ERROR_NOT_FOUND)", "-1 (ERROR_INVALID_PARAM)", ErrorCode.INVALID_ARGUMENT);
    }

    @Test
    void statusesOfNixlUpTo14BecomeTheSameErrors()
    {
        // 1.4 and earlier report "not found" and deep parameter errors as -2 too
        assertStatusesMapped(FakeNixl.V1_4, "-2 (ERROR_BACKEND)", "-2 (ERROR_BACKEND)", ErrorCode.NATIVE_ERROR);
    }

    private void assertStatusesMapped(FakeNixl fake, String notFound, String deepInvalid, ErrorCode badIndex)
    {
        NixlAgent agent = open(fake, "a");
        NixlAgent other = open(fake, "b");
        MemorySegment memory = registered(agent, 1);
        MemorySegment otherMemory = registered(other, 2);
        assertCode(ErrorCode.DESCRIPTOR_OUT_OF_RANGE, "nixl_capi_prep_xfer_dlist returned " + notFound,
                () -> agent.prepareLocal(MemoryKind.HOST, 0, new long[] {memory.address() + BYTES}, new long[] {64}, 1));
        assertCode(ErrorCode.NOT_REGISTERED, "nixl_capi_deregister_mem returned " + notFound,
                () -> agent.deregisterMemory(MemoryKind.HOST, 0, memory.address(), 64));
        assertCode(ErrorCode.PROTOCOL_ERROR, "nixl_capi_load_remote_md returned " + deepInvalid, () -> agent.loadRemoteMetadata(agent.localMetadata()));
        assertCode(ErrorCode.PROTOCOL_ERROR, "nixl_capi_load_remote_md returned -2 (ERROR_BACKEND)", () -> agent.loadRemoteMetadata(new byte[] {1, 2, 3}));
        assertCode(ErrorCode.PEER_UNKNOWN, "nixl_capi_gen_notif returned " + notFound, () -> agent.sendNotification("nobody", new byte[] {1}));
        assertCode(ErrorCode.PEER_UNKNOWN, "nixl_capi_prep_xfer_dlist returned " + notFound,
                () -> agent.prepareRemote("nobody", MemoryKind.HOST, 0, new long[] {otherMemory.address()}, new long[] {64}, 1));
        String peer = agent.loadRemoteMetadata(other.localMetadata());
        long local = agent.prepareLocal(MemoryKind.HOST, 0, new long[] {memory.address()}, new long[] {64}, 1);
        long remote = agent.prepareRemote(peer, MemoryKind.HOST, 0, new long[] {otherMemory.address()}, new long[] {64}, 1);
        // the transport checks indices first; here NIXL itself must refuse one past the end
        assertCode(badIndex, "nixl_capi_make_xfer_req returned " + deepInvalid,
                () -> agent.makeRequest(TransferOp.READ, local, new int[] {1}, remote, new int[] {0}, 1, null));
        agent.releasePrepared(remote);
        agent.releasePrepared(local);
        assertTrue(agent.invalidateRemoteMetadata(peer));
    }
}
