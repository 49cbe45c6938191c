package io.kvbridge.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code kvbridge} launcher on a machine with a JDK and nothing else. */
final class LauncherTest
{
    @Test
    void testWithoutGccSaysWhatToInstallBeforeMavenStarts(@TempDir Path directory) throws Exception
    {
        Path root = Files.createDirectory(directory.resolve("clone"));
        Files.copy(Path.of("..", "kvbridge"), root.resolve("kvbridge"), StandardCopyOption.COPY_ATTRIBUTES);
        // a Maven that would build and run every test: the launcher must not get that far
        Path maven = root.resolve("mvnw");
        Files.writeString(maven, "#!/bin/sh\necho 'maven started' >&2\nexit 3\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(maven, PosixFilePermissions.fromString("rwxr-xr-x"));
        // the JDK and the tools the launcher itself uses; no gcc
        Path bin = Files.createDirectory(directory.resolve("bin"));
        for (String tool : new String[] {"dirname", "awk", "date"}) {
            Files.createSymbolicLink(bin.resolve(tool), which(tool).toRealPath());
        }
        ProcessBuilder builder = new ProcessBuilder(which("bash").toString(), root.resolve("kvbridge").toString(), "test");
        builder.environment().clear();
        builder.environment().putAll(Map.of("PATH", bin.toString(), "JAVA_HOME", System.getProperty("java.home"), "HOME", directory.toString()));
        Process launcher = builder.start();
        assertTrue(launcher.waitFor(60, TimeUnit.SECONDS), "the launcher did not end within 60 s");
        String out = new String(launcher.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(launcher.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(1, launcher.exitValue(), err);
        assertEquals("", out);
        assertEquals(1, err.lines().count(), err);
        assertTrue(err.startsWith("kvbridge test: no gcc") && err.contains("apt-get install gcc"), err);
    }

    private static Path which(String tool) throws IOException
    {
        for (String directory : System.getenv("PATH").split(":")) {
            Path candidate = Path.of(directory, tool);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new IOException(tool + " is not on the PATH of the tests");
    }
}
