package io.kvbridge.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.AssertionFailedError;
import org.opentest4j.TestAbortedException;

/** How a test that needs a native fake fares where the build compiled it, skipped it, or failed to. */
final class NativeFakesTest
{
    private static final String PROPERTY = "kvbridge.testkit.test.fake";

    @TempDir
    Path directory;

    private final String skipBefore = System.getProperty(NativeFakes.SKIP_PROPERTY);

    @AfterEach
    void restore()
    {
        System.clearProperty(PROPERTY);
        if (skipBefore == null) {
            System.clearProperty(NativeFakes.SKIP_PROPERTY);
        }
        else {
            System.setProperty(NativeFakes.SKIP_PROPERTY, skipBefore);
        }
    }

    @Test
    void aBuiltFakeIsReturnedWhateverTheSkipProperty() throws Exception
    {
        Path fake = Files.writeString(directory.resolve("libfake.so"), "");
        System.setProperty(PROPERTY, fake.toString());
        System.setProperty(NativeFakes.SKIP_PROPERTY, "true");
        assertEquals(fake, NativeFakes.require(PROPERTY, true));
    }

    @Test
    void aFakeTheBuildSkippedSkipsTheTestWithTheOneReason()
    {
        System.setProperty(PROPERTY, directory.resolve("absent.so").toString());
        System.setProperty(NativeFakes.SKIP_PROPERTY, "true");
        TestAbortedException skipped = assertThrows(TestAbortedException.class, () -> NativeFakes.require(PROPERTY, false));
        assertEquals(NativeFakes.SKIPPED, skipped.getMessage());
        assertTrue(NativeFakes.SKIPPED.startsWith("gcc not found") && NativeFakes.SKIPPED.endsWith("install gcc"), NativeFakes.SKIPPED);
    }

    @Test
    void underCiAFakeTheBuildSkippedIsAFailure()
    {
        System.setProperty(PROPERTY, directory.resolve("absent.so").toString());
        System.setProperty(NativeFakes.SKIP_PROPERTY, "true");
        AssertionFailedError failed = assertThrows(AssertionFailedError.class, () -> NativeFakes.require(PROPERTY, true));
        assertTrue(failed.getMessage().contains("required under CI") && failed.getMessage().contains(NativeFakes.SKIPPED), failed.getMessage());
    }

    @Test
    void aFakeMissingWhereTheBuildDidNotSkipItIsABuildFault()
    {
        Path absent = directory.resolve("absent.so");
        System.setProperty(PROPERTY, absent.toString());
        System.setProperty(NativeFakes.SKIP_PROPERTY, "false");
        IllegalStateException fault = assertThrows(IllegalStateException.class, () -> NativeFakes.require(PROPERTY, false));
        assertTrue(fault.getMessage().contains(absent.toString()) && fault.getMessage().contains(PROPERTY), fault.getMessage());
    }

    @Test
    void anUnsetPropertySaysToRunThroughMaven()
    {
        IllegalStateException unset = assertThrows(IllegalStateException.class, () -> NativeFakes.require(PROPERTY, false));
        assertTrue(unset.getMessage().contains(PROPERTY + " is not set"), unset.getMessage());
    }
}
