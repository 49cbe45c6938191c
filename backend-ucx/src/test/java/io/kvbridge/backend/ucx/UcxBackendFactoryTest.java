package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.backend.ucx.ffm.UcpContext;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.ChildJvm;
import io.kvbridge.testkit.SideChannelContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** The factory is found by ServiceLoader, probes UCX without throwing, and says why it cannot run. */
@Timeout(120)
@ExtendWith(UcxInstalled.class)
final class UcxBackendFactoryTest
{
    private static final Duration STEP = Duration.ofSeconds(60);

    @Test
    void serviceLoaderFindsTheFactory()
    {
        List<TransferBackendFactory> found = ServiceLoader.load(TransferBackendFactory.class).stream()
                .map(ServiceLoader.Provider::get).filter(factory -> factory.name().equals("ucx")).toList();
        assertEquals(1, found.size());
        assertTrue(found.getFirst() instanceof UcxBackendFactory);
        assertEquals(Spi.VERSION, found.getFirst().spiVersion());
        assertTrue(found.getFirst().priority() > 0, "ucx ranks above local for auto");
    }

    @Test
    void probeReportsVersionTransportsAndCapabilities()
    {
        Availability availability = new UcxBackendFactory().probe();
        assertTrue(availability.available(), () -> availability.reasons().toString());
        assertTrue(availability.details().get("version").matches("1\\.\\d+\\.\\d+"), availability.details().toString());
        assertTrue(availability.details().get("transports").contains("tcp/lo"), availability.details().toString());
        assertEquals("enabled", availability.details().get("native-access"));
        assertTrue(availability.capabilities().containsAll(List.of(Capability.HOST_MEMORY, Capability.TRANSPORT_ALLOCATION,
                Capability.CROSS_PROCESS, Capability.PEER_FAILURE_DETECTION)), availability.capabilities().toString());
    }

    @Test
    void createRejectsUnknownAndMalformedOptions()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class,
                () -> new UcxBackendFactory().create(Map.of("tls", "sm tcp", "colour", "blue"), () -> "agent"));
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().contains("tls=sm tcp") && e.getMessage().contains("unknown option colour"), e.getMessage());
    }

    @Test
    void createWithATransportUcxDoesNotHaveFailsWithConfigInvalid()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class,
                () -> new UcxBackendFactory().create(Map.of("tls", "nosuchtransport"), () -> "agent").close());
        assertEquals(ErrorCode.CONFIG_INVALID, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains("tls=nosuchtransport"), e.getMessage());
    }

    @Test
    void tcpLanesAreRefusedWithoutTheOptInBeforeUcxOpens() throws Exception
    {
        // parsing refuses first, so this holds where UCX is not even installed
        KvBridgeException e = assertThrows(KvBridgeException.class,
                () -> new UcxBackendFactory().create(Map.of("tls", "tcp", "net-devices", "lo"), new SideChannelContext("remote", "10.0.0.1")));
        assertEquals(ErrorCode.CONFIG_INVALID, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains("tls=tcp lets UCX open its tcp transport") && e.getMessage().contains("allow-unchecked-tcp-lane=true"),
                e::getMessage);
        assertFalse(e.getMessage().contains("\n"), e::getMessage);
        // the environment's lanes are refused the same way
        UcxTestSupport.assumeUcxInstalled();
        try (ChildJvm child = ChildJvm.start("instance", ChildJvm.NATIVE_ACCESS, Map.of("UCX_TLS", "tcp"), InstanceProcess.class, "net-devices=lo")) {
            assertNotEquals(0, child.awaitExit(STEP), child::transcript);
            assertTrue(child.transcript().contains("UCX_TLS=tcp (the environment) lets UCX open its tcp transport"), child::transcript);
            assertFalse(child.transcript().contains("OPEN"), child::transcript);
        }
    }

    @Test
    void createdTransportReportsTheTransportsItSelected()
    {
        try (TransferBackend backend = new UcxBackendFactory().create(Map.of("tls", "tcp", "net-devices", "lo", UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true"), () -> "agent")) {
            assertEquals("ucx", backend.name());
            assertEquals("tcp/lo", ((UcxTransferBackend) backend).transports());
        }
    }

    @Test
    void everySettingTheInstanceGivesUcxIsTakenByIt() throws Exception
    {
        // UCX warns about each setting no component took (the tcp segment is one of the instance's own)
        try (ChildJvm child = ChildJvm.start("instance", ChildJvm.NATIVE_ACCESS, InstanceProcess.class, "tls=tcp", "net-devices=lo", "allow-unchecked-tcp-lane=true")) {
            assertEquals("OPEN tcp/lo", child.expect("OPEN", STEP));
            child.expect("CLOSED", STEP);
            assertEquals(0, child.awaitExit(STEP));
            assertFalse(child.transcript().contains("invalid configuration"), child::transcript);
        }
        // the other side of the check: a setting no component takes is reported, as UCX 1.13's warning once the instance
        // opened (1.13 also ignores a transport's setting spelt with its prefix, as the environment spells it), or as
        // UCX 1.22's refusal before it opens
        String setting = UcpContext.version().startsWith("1.13.") ? "TCP_TX_SEG_SIZE=8192" : "TCP_NO_SUCH_SETTING=8192";
        try (ChildJvm child = ChildJvm.start("instance", ChildJvm.NATIVE_ACCESS, InstanceProcess.class, "tls=tcp", "net-devices=lo", "allow-unchecked-tcp-lane=true",
                "ucx-config=" + setting)) {
            int exit = child.awaitExit(STEP);
            String transcript = child.transcript();
            assertTrue(exit == 0 ? transcript.contains("invalid configuration: " + setting) : transcript.contains("UCX refused " + setting), transcript);
        }
    }

    @Test
    void withoutNativeAccessTheProbeNamesTheFlag() throws Exception
    {
        try (ChildJvm child = ChildJvm.start("probe", List.of(), ProbeProcess.class)) {
            assertEquals("AVAILABLE false", child.expect("AVAILABLE", STEP));
            String reason = child.expect("REASON", STEP);
            assertTrue(reason.contains("--enable-native-access=ALL-UNNAMED"), reason);
            assertEquals(0, child.awaitExit(STEP));
        }
    }

    @Test
    void anEnabledProbeLoadsUcxIntoTheProcess() throws Exception
    {
        // the other side of the kill switch's check: the same observation sees UCX when it is loaded
        try (ChildJvm child = ChildJvm.start("probe", List.of("--enable-native-access=ALL-UNNAMED"), ProbeProcess.class)) {
            assertEquals("UCP_MAPPED true", child.expect("UCP_MAPPED", STEP));
            assertEquals("AVAILABLE true", child.expect("AVAILABLE", STEP));
            assertEquals(0, child.awaitExit(STEP));
        }
    }

    @Test
    void theKillSwitchMakesTheProbeReportUnavailable() throws Exception
    {
        try (ChildJvm child = ChildJvm.start("probe", List.of("--enable-native-access=ALL-UNNAMED", "-Dkvbridge.ucx.enabled=false"),
                ProbeProcess.class)) {
            assertEquals("UCP_MAPPED false", child.expect("UCP_MAPPED", STEP), "a switched-off transport loads no UCX into the process");
            assertEquals("AVAILABLE false", child.expect("AVAILABLE", STEP));
            String reason = child.expect("REASON", STEP);
            assertTrue(reason.contains("-Dkvbridge.ucx.enabled=false"), reason);
            assertEquals(0, child.awaitExit(STEP));
        }
    }

    @Test
    void withoutTheLibraryTheProbeSaysWhatToInstall() throws Exception
    {
        try (ChildJvm child = ChildJvm.start("probe", List.of("--enable-native-access=ALL-UNNAMED", "-Dkvbridge.ucx.library=/nonexistent-ucx"),
                ProbeProcess.class)) {
            assertEquals("AVAILABLE false", child.expect("AVAILABLE", STEP));
            String reason = child.expect("REASON", STEP);
            assertTrue(reason.contains("libucs.so.0") && reason.contains("apt-get install -y libucx0"), reason);
            assertEquals(0, child.awaitExit(STEP));
        }
    }
}
