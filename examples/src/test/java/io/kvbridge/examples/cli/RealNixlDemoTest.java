package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The demo over the {@code nixl} transport bound to an installed NIXL, never the test fake: in one
 * process and with every producer stage and the decoder in a process of its own, pushing and in
 * mixed mode. The {@code ucx} transport is switched off, as the transport's README says to run with
 * NIXL's own UCX, and the listing must show that the process maps that one UCX alone. Runs where
 * {@code -Dkvbridge.nixl.library} names an installed NIXL (with NIXL's UCX and Abseil on
 * {@code LD_LIBRARY_PATH} and {@code NIXL_PLUGIN_DIR} set); skipped with that reason elsewhere.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
final class RealNixlDemoTest
{
    private static final String LIBRARY_PROPERTY = "kvbridge.nixl.library";

    @TempDir
    Path directory;

    static Stream<List<String>> demos()
    {
        return Stream.of(List.of(), List.of("--mode", "mixed"), List.of("--processes"), List.of("--processes", "--mode", "mixed"));
    }

    @ParameterizedTest(name = "demo --backend nixl {0}")
    @MethodSource("demos")
    void theDemoEndsOkOnTheInstalledNixl(List<String> options) throws Exception
    {
        String library = System.getProperty(LIBRARY_PROPERTY, "");
        assumeTrue(!library.isEmpty(), "no installed NIXL is named: run with -D" + LIBRARY_PROPERTY
                + "=<directory of libnixl_capi.so>, NIXL's UCX and Abseil on LD_LIBRARY_PATH and NIXL_PLUGIN_DIR set, to run the demo on it");
        List<String> jvm = List.of("-D" + LIBRARY_PROPERTY + "=" + library, "-Dkvbridge.ucx.enabled=false");

        ChildCli.Run plugins = ChildCli.run(directory, jvm, "plugins");
        String nixl = plugins.out().lines().filter(line -> line.matches("transport\\s+nixl\\s.*")).findFirst().orElse("");
        // named on purpose, so an install that cannot run is a failure, not a skip
        assertTrue(nixl.matches("transport\\s+nixl\\s+yes\\s.*"), "the named NIXL cannot run: " + nixl + plugins.err());
        assertTrue(nixl.contains("implementation=NIXL"), "the named library is not NIXL itself: " + nixl);
        // the libucp each mapped UCX is listed by, up to the next detail
        Matcher mapped = Pattern.compile("ucx-library=(.*?), plugins=").matcher(nixl);
        assertTrue(mapped.find(), "the listing names no UCX library: " + nixl);
        assertEquals(1, mapped.group(1).split("libucp\\.so", -1).length - 1, "NIXL's plugin must run on one UCX, the only one mapped: " + nixl);

        List<String> args = new ArrayList<>(List.of("demo", "--backend", "nixl", "--allow-unchecked-tcp-lane", "--requests", "40",
                "--idle-seconds", "1"));
        args.addAll(options);
        ChildCli.Run demo = ChildCli.run(directory, jvm, args.toArray(String[]::new));
        assertEquals(0, demo.exitCode(), demo.out() + demo.err());
        assertTrue(demo.out().contains("over 'nixl'"), demo.out());
        assertTrue(demo.out().lines().anyMatch(line -> line.matches("\\s*parity errors\\s+0 bytes.*")), demo.out());
        assertTrue(demo.out().lines().anyMatch(line -> line.matches("\\s*failed transfers\\s+0 .*")), demo.out());
        assertTrue(demo.out().lines().anyMatch(line -> line.matches("\\s*result\\s+OK")), demo.out());
    }
}
