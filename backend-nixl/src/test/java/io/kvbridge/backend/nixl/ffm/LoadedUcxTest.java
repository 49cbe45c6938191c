package io.kvbridge.backend.nixl.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Which UCX a process has mapped, read from its memory map, and the version the mapped library reports. */
final class LoadedUcxTest
{
    private static final Path SYSTEM_UCP = Path.of("/usr/lib/x86_64-linux-gnu/libucp.so.0");

    @Test
    void findsEachMappedLibucpOnce()
    {
        List<String> maps = List.of(
                "7f0a1000-7f0a2000 r--p 00000000 08:01 1234   /usr/lib/x86_64-linux-gnu/libucp.so.0.0.0",
                "7f0a2000-7f0a3000 r-xp 00001000 08:01 1234   /usr/lib/x86_64-linux-gnu/libucp.so.0.0.0",
                "7f0b0000-7f0b1000 r--p 00000000 08:01 99     /opt/ucx-1.22/lib/libucp.so.0.0.0",
                "7f0c0000-7f0c1000 r--p 00000000 08:01 77     /opt/ucx-1.22/lib/libucs.so.0.0.0",
                "7ffd0000-7ffd1000 rw-p 00000000 00:00 0      [stack]",
                "7f0d0000-7f0d1000 rw-p 00000000 00:00 0");
        assertEquals(List.of(Path.of("/usr/lib/x86_64-linux-gnu/libucp.so.0.0.0"), Path.of("/opt/ucx-1.22/lib/libucp.so.0.0.0")), LoadedUcx.mappedUcp(maps));
    }

    @Test
    void comparesVersions()
    {
        assertTrue(new LoadedUcx(SYSTEM_UCP, Optional.of("1.13.1"), false).olderThan(1, 19));
        assertTrue(new LoadedUcx(SYSTEM_UCP, Optional.of("0.99.0"), false).olderThan(1, 19));
        assertTrue(!new LoadedUcx(SYSTEM_UCP, Optional.of("1.19.0"), false).olderThan(1, 19));
        assertTrue(!new LoadedUcx(SYSTEM_UCP, Optional.of("2.0.0"), false).olderThan(1, 19));
        assertTrue(!new LoadedUcx(SYSTEM_UCP, Optional.empty(), false).olderThan(1, 19), "unknown is not older");
    }

    @Test
    @Timeout(60)
    void aChildProcessSeesTheUcxItLoadedWithItsVersion() throws IOException, InterruptedException
    {
        assumeTrue(Files.exists(SYSTEM_UCP), SYSTEM_UCP + " is not installed (Debian's libucx0)");
        // in a child JVM: this one must not hold a system UCX that a later test could bind by accident
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process child = new ProcessBuilder(java.toString(), "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                Child.class.getName(), SYSTEM_UCP.toString()).redirectErrorStream(true).start();
        String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(child.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, child.exitValue(), output);
        List<String> lines = output.lines().toList();
        assertEquals("before []", lines.get(0), output);
        assertTrue(lines.get(1).matches("after \\[/\\S+/libucp\\.so\\.0[.0-9]* \\(UCX \\d+\\.\\d+\\.\\d+(, with CUDA)?\\)]"), output);
    }

    /** Maps a UCX library without initialising it, and prints what {@link LoadedUcx} sees before and after. */
    static final class Child
    {
        public static void main(String[] args)
        {
            System.out.println("before " + LoadedUcx.inThisProcess());
            SymbolLookup.libraryLookup(Path.of(args[0]), Arena.global());
            System.out.println("after " + LoadedUcx.inThisProcess());
        }
    }
}
