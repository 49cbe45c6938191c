package io.kvbridge.backend.nixl;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.transfer.Availability;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The kill switch and the default-configuration answer, before anything is loaded. */
@Timeout(30)
final class NixlAvailabilityTest
{
    @AfterEach
    void clearProperties()
    {
        System.clearProperty(NixlBackendFactory.ENABLED_PROPERTY);
        System.clearProperty(NixlBackendFactory.LIBRARY_PROPERTY);
        System.clearProperty(NixlBackendFactory.ALLOW_FAKE_PROPERTY);
    }

    @Test
    void theKillSwitchMakesTheTransportUnavailableWithoutLoadingAnything()
    {
        System.setProperty(NixlBackendFactory.ENABLED_PROPERTY, "false");
        Availability availability = FakeNixl.HEAD.factory().probe();
        assertFalse(availability.available());
        assertEquals(1, availability.reasons().size(), availability.reasons()::toString);
        assertTrue(availability.reasons().getFirst().contains("-Dkvbridge.nixl.enabled=false"), availability.reasons()::toString);
        assertFalse(availability.details().containsKey("library"), "nothing was located");
        assertFalse(NixlAvailability.isAvailable());
        assertTrue(NixlAvailability.unavailabilityCause().orElseThrow().contains("switched off"));
        assertCode(ErrorCode.BACKEND_UNAVAILABLE, () -> FakeNixl.HEAD.factory().create(FakeNixl.HEAD.options(), () -> "off"));
    }

    @Test
    void aKillSwitchThatIsNeitherTrueNorFalseIsRefused()
    {
        // outside assertCode, which would take a skip (the fake not built) for the wrong exception
        NixlBackendFactory factory = FakeNixl.HEAD.factory();
        System.setProperty(NixlBackendFactory.ENABLED_PROPERTY, "perhaps");
        assertCode(ErrorCode.CONFIG_INVALID, () -> factory.create(Map.of(), () -> "bad"));
        assertFalse(factory.probe().available(), "the probe reports it and does not throw");
    }

    @Test
    void theDefaultConfigurationComesFromTheLibraryProperty()
    {
        System.setProperty(NixlBackendFactory.LIBRARY_PROPERTY, FakeNixl.HEAD.library().toString());
        System.setProperty(NixlBackendFactory.ALLOW_FAKE_PROPERTY, "true");
        assertTrue(NixlAvailability.isAvailable(), () -> NixlAvailability.unavailabilityCause().orElse(""));
        System.setProperty(NixlBackendFactory.ENABLED_PROPERTY, "true");
        assertTrue(NixlAvailability.isAvailable(), "enabled=true is the default");
        System.clearProperty(NixlBackendFactory.ALLOW_FAKE_PROPERTY);
        assertTrue(NixlAvailability.unavailabilityCause().orElseThrow().contains("test fake"));
    }
}
