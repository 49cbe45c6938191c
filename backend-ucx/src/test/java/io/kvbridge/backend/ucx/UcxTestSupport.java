package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.backend.ucx.ffm.UcxAvailability;
import java.util.Optional;

/** Decides whether UCX tests run: they skip only where the UCX libraries are not installed at all. */
final class UcxTestSupport
{
    /** Set to true (or run with the CI environment variable) to fail instead of skipping without UCX. */
    static final String REQUIRED_PROPERTY = "kvbridge.ucx.required";

    private UcxTestSupport()
    {
    }

    /**
     * Skips the calling test class when the UCX libraries cannot be found, unless UCX is required.
     * UCX installed but unusable is a failure, reported by the tests themselves. The check goes
     * through the transport's own loader: loading libucs any other way first would let UCX install
     * its signal handlers in this JVM.
     */
    static void assumeUcxInstalled()
    {
        Optional<String> missing = missing();
        assumeTrue(missing.isEmpty(), () -> missing.orElse(""));
    }

    /**
     * Why UCX tests cannot run here, failing instead where UCX is required.
     *
     * @return the reason to skip, naming the package to install; empty when UCX is installed.
     */
    static Optional<String> missing()
    {
        if (!UcxAvailability.librariesMissing()) {
            return Optional.empty();
        }
        String cause = UcxAvailability.unavailabilityCause().orElse("?");
        if (Boolean.getBoolean(REQUIRED_PROPERTY) || System.getenv("CI") != null) {
            fail("UCX is required here but missing: " + cause);
        }
        return Optional.of("UCX is not installed: " + cause);
    }
}
