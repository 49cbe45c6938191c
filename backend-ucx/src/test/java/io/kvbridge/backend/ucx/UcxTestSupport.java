package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;

/** Decides whether UCX tests run: they skip only where the UCX libraries are not installed at all. */
final class UcxTestSupport
{
    /** Set to true (or run with the CI environment variable) to fail instead of skipping without UCX. */
    static final String REQUIRED_PROPERTY = "kvbridge.ucx.required";

    private UcxTestSupport()
    {
    }

    /** Skips the calling test class when libucp.so.0 cannot be loaded, unless UCX is required. */
    @SuppressWarnings("restricted")
    static void assumeUcxInstalled()
    {
        boolean installed;
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup("libucp.so.0", arena);
            installed = true;
        }
        catch (IllegalArgumentException e) {
            installed = false;
        }
        if (!installed && (Boolean.getBoolean(REQUIRED_PROPERTY) || System.getenv("CI") != null)) {
            fail("UCX is required here but libucp.so.0 is not installed: apt-get install -y libucx0");
        }
        assumeTrue(installed, "UCX is not installed (libucp.so.0 not found; apt-get install -y libucx0)");
    }
}
