package io.kvbridge.testkit;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.abort;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Finds the native test fakes the build compiles with gcc (the fake {@code libnixl_capi.so} and the
 * fake CUDA driver {@code libcuda.so.1}), for every test that loads one. Where the build skipped
 * them ({@value #SKIP_PROPERTY}{@code =true}, which {@code ./kvbridge test} passes on a machine
 * without gcc) the calling test is skipped with {@link #SKIPPED}, one reason for all of them, so
 * that the skipped-tests table counts them together and names gcc. Call it from a test method or a
 * {@code @BeforeEach} (not a {@code @BeforeAll}, whose skips Surefire does not count). Under CI (the
 * {@code CI} environment variable) a skipped fake fails instead, as a missing UCX does.
 */
public final class NativeFakes
{
    /** The build property, handed to the tests as a system property, that skips compiling the fakes. */
    public static final String SKIP_PROPERTY = "kvbridge.nativeFakes.skip";
    /** The one reason every test that needs a fake skips with; it names what to install. */
    public static final String SKIPPED = "gcc not found: the native fakes of NIXL and the CUDA driver were not built; install gcc";

    private static final long GCC_SECONDS = 30;

    private NativeFakes()
    {
    }

    /**
     * The fake the system property {@code property} names.
     *
     * @param property the system property the build sets to the fake's path, such as {@code kvbridge.nixl.test.fake}.
     * @return the fake's path, a regular file.
     * @throws org.opentest4j.TestAbortedException when the build skipped the fakes (the test is skipped).
     * @throws IllegalStateException when the property is unset, or the build should have compiled the fake and did not.
     */
    public static Path require(String property)
    {
        return require(property, System.getenv("CI") != null);
    }

    static Path require(String property, boolean underCi)
    {
        String value = System.getProperty(property);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException(property + " is not set: run the tests through Maven, which builds the native fakes and sets it");
        }
        Path fake = Path.of(value);
        if (Files.isRegularFile(fake)) {
            return fake;
        }
        if (!Boolean.getBoolean(SKIP_PROPERTY)) {
            throw new IllegalStateException("the native fake " + fake + " (" + property + ") is missing although the build did not skip the fakes ("
                    + SKIP_PROPERTY + " is not true): its gcc step failed or did not run; build the module's tests with Maven");
        }
        if (underCi) {
            fail("gcc is required under CI but " + SKIPPED + " (" + fake + " is missing)");
        }
        return abort(SKIPPED);
    }

    /**
     * Skips the calling test where {@code gcc} does not run, for tests that compile C at run time;
     * under CI it fails instead.
     *
     * @param purpose what the test compiles, for the reason: "gcc not found: PURPOSE; install gcc".
     */
    public static void assumeGccRuns(String purpose)
    {
        if (gccRuns()) {
            return;
        }
        String reason = "gcc not found: " + purpose + "; install gcc";
        if (System.getenv("CI") != null) {
            fail("gcc is required under CI: " + reason);
        }
        abort(reason);
    }

    /** {@return true when {@code gcc --version} runs and exits 0 within 30 s} */
    public static boolean gccRuns()
    {
        try {
            Process gcc = new ProcessBuilder("gcc", "--version").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!gcc.waitFor(GCC_SECONDS, TimeUnit.SECONDS)) {
                gcc.destroyForcibly();
                return false;
            }
            return gcc.exitValue() == 0;
        }
        catch (IOException e) {
            return false;
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
