package io.kvbridge.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ./kvbridge test} on a machine with a JDK and nothing else, and under CI. */
final class LauncherTest
{
    private static final String SKIP_FAKES = "-Dkvbridge.nativeFakes.skip=true";

    /** What the launcher printed, and the arguments Maven got (empty when it did not start). */
    private record Run(int exitCode, String out, String err, List<String> mavenArgs)
    {
    }

    @Test
    void testWithoutGccSkipsTheNativeFakesSaysWhatToInstallAndRunsMaven(@TempDir Path directory) throws Exception
    {
        Run run = launch(directory, false, Map.of());
        assertEquals(3, run.exitCode(), "Maven's exit status is the launcher's: " + run.err());
        assertTrue(run.mavenArgs().contains("verify") && run.mavenArgs().contains(SKIP_FAKES), run.mavenArgs().toString());
        // a failing module must not leave the later modules' tests out of the closing table
        assertTrue(run.mavenArgs().contains("--fail-at-end"), run.mavenArgs().toString());
        List<String> lines = run.err().lines().toList();
        assertTrue(lines.size() >= 2 && lines.get(1).equals("maven started"), "one line, then Maven: " + run.err());
        String line = lines.getFirst();
        assertTrue(line.startsWith("kvbridge test: no gcc") && line.contains("skipped") && line.contains("apt-get install gcc"), line);
    }

    @Test
    void testWithGccBuildsTheNativeFakes(@TempDir Path directory) throws Exception
    {
        Run run = launch(directory, true, Map.of());
        assertEquals(3, run.exitCode(), run.err());
        assertTrue(run.mavenArgs().contains("verify"), run.mavenArgs().toString());
        assertFalse(run.mavenArgs().contains(SKIP_FAKES), run.mavenArgs().toString());
        assertFalse(run.err().contains("no gcc"), run.err());
    }

    @Test
    void testWithoutGccUnderCiRefusesBeforeMavenStarts(@TempDir Path directory) throws Exception
    {
        Run run = launch(directory, false, Map.of("CI", "true"));
        assertEquals(1, run.exitCode(), run.err());
        assertEquals(List.of(), run.mavenArgs(), "Maven must not start");
        assertEquals("", run.out());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().startsWith("kvbridge test: no gcc") && run.err().contains("apt-get install gcc"), run.err());
    }

    /**
     * Runs {@code kvbridge test} from a copy of the launcher whose {@code mvnw} records its arguments
     * and exits 3, on a PATH of the JDK and the tools the launcher uses, with a {@code gcc} or without.
     */
    private static Run launch(Path directory, boolean withGcc, Map<String, String> environment) throws IOException, InterruptedException
    {
        Path root = Files.createDirectory(directory.resolve("clone"));
        Files.copy(Path.of("..", "kvbridge"), root.resolve("kvbridge"), StandardCopyOption.COPY_ATTRIBUTES);
        Path arguments = directory.resolve("maven-args");
        executable(root.resolve("mvnw"), "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + arguments + "'\necho 'maven started' >&2\nexit 3\n");
        Path bin = Files.createDirectory(directory.resolve("bin"));
        for (String tool : new String[] {"dirname", "awk", "date"}) {
            Files.createSymbolicLink(bin.resolve(tool), which(tool).toRealPath());
        }
        if (withGcc) {
            executable(bin.resolve("gcc"), "#!/bin/sh\nexit 0\n");
        }
        ProcessBuilder builder = new ProcessBuilder(which("bash").toString(), root.resolve("kvbridge").toString(), "test");
        Map<String, String> env = new HashMap<>(Map.of("PATH", bin.toString(), "JAVA_HOME", System.getProperty("java.home"), "HOME", directory.toString()));
        env.putAll(environment);
        builder.environment().clear();
        builder.environment().putAll(env);
        Process launcher = builder.start();
        assertTrue(launcher.waitFor(60, TimeUnit.SECONDS), "the launcher did not end within 60 s");
        String out = new String(launcher.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(launcher.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        List<String> mavenArgs = Files.exists(arguments) ? Files.readAllLines(arguments, StandardCharsets.UTF_8) : List.of();
        return new Run(launcher.exitValue(), out, err, mavenArgs);
    }

    private static void executable(Path file, String script) throws IOException
    {
        Files.writeString(file, script, StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
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
