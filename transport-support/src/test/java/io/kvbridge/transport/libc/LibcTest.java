package io.kvbridge.transport.libc;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

final class LibcTest
{
    @Test
    void closeOfABadDescriptorReportsEbadfByName()
    {
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            assertEquals(-1, Libc.close(-1, errno));
            assertEquals(Errno.EBADF, errno.last());
            KvBridgeException failure = errno.failure(ErrorCode.NATIVE_ERROR, "close", "closing fd -1");
            assertEquals(ErrorCode.NATIVE_ERROR, failure.code());
            assertTrue(failure.getMessage().contains("close returned -1 (EBADF: " + Libc.strerror(Errno.EBADF) + ") while closing fd -1"),
                    failure.getMessage());
        }
    }

    @Test
    void aSuccessfulCallLeavesTheLastFailureAlone()
    {
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            assertEquals(-1, Libc.close(-1, errno));
            int fd = Libc.eventfd(errno);
            assertTrue(fd >= 0, () -> "eventfd: " + Errno.describe(errno.last()));
            assertEquals(0, Libc.close(fd, errno));
            assertEquals(Errno.EBADF, errno.last());
        }
    }

    @Test
    void anEventfdWakesAPollAndDrains()
    {
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            int fd = Libc.eventfd(errno);
            assertTrue(fd >= 0, () -> "eventfd: " + Errno.describe(errno.last()));
            MemorySegment pollSet = arena.allocate(Libc.POLLFD_BYTES, 8);
            pollSet.set(JAVA_INT, 0, fd);
            pollSet.set(JAVA_SHORT, Libc.POLLFD_EVENTS, Libc.POLLIN);
            assertEquals(0, Libc.poll(pollSet.address(), 1, 0, errno), "nothing written yet");
            MemorySegment counter = arena.allocate(JAVA_LONG);
            counter.set(JAVA_LONG, 0, 3L);
            assertEquals(8, Libc.write(fd, counter.address(), 8, errno));
            assertEquals(1, Libc.poll(pollSet.address(), 1, 1000, errno));
            assertEquals(Libc.POLLIN, pollSet.get(JAVA_SHORT, Libc.POLLFD_REVENTS));
            counter.set(JAVA_LONG, 0, 0L);
            assertEquals(8, Libc.read(fd, counter.address(), 8, errno));
            assertEquals(3L, counter.get(JAVA_LONG, 0));
            assertEquals(-1, Libc.read(fd, counter.address(), 8, errno), "drained, and non-blocking");
            assertEquals(Errno.EAGAIN, errno.last());
            assertEquals(0, Libc.close(fd, errno));
        }
    }

    @Test
    void aFileIsNoTerminal()
    {
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            int fd = Libc.open("/dev/null", Libc.O_RDWR | Libc.O_CLOEXEC, errno);
            assertTrue(fd >= 0, () -> "open: " + Errno.describe(errno.last()));
            assertEquals(0, Libc.isatty(fd, errno));
            assertEquals(Errno.ENOTTY, errno.last());
            assertEquals(0, Libc.close(fd, errno));
            assertEquals(-1, Libc.open("/nonexistent/kvbridge", Libc.O_RDWR, errno));
            assertEquals("ENOENT", Errno.name(errno.last()));
        }
    }

    @Test
    void aMemfdMapsSharedAndRefusesAnOccupiedFixedAddress()
    {
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            long bytes = 1 << 16;
            int fd = LibcMemory.memfdCreate("kvbridge-libc-test", errno);
            assertTrue(fd >= 0, () -> "memfd_create: " + Errno.describe(errno.last()));
            assertEquals(0, LibcMemory.ftruncate(fd, bytes, errno));
            long first = LibcMemory.mmapShared(fd, bytes, errno);
            assertNotEquals(LibcMemory.MAP_FAILED, first, () -> "mmap: " + Errno.describe(errno.last()));
            long second = LibcMemory.mmapShared(fd, bytes, errno);
            assertNotEquals(LibcMemory.MAP_FAILED, second);
            MemorySegment.ofAddress(first).reinterpret(bytes).set(JAVA_LONG, 8, 0x5eedL);
            assertEquals(0x5eedL, MemorySegment.ofAddress(second).reinterpret(bytes).get(JAVA_LONG, 8), "both mappings see one file");

            long taken = LibcMemory.mmap(first, bytes, LibcMemory.PROT_READ, LibcMemory.MAP_SHARED | LibcMemory.MAP_FIXED_NOREPLACE, fd, 0, errno);
            assertEquals(LibcMemory.MAP_FAILED, taken);
            assertEquals(Errno.EEXIST, errno.last());

            assertEquals(0, LibcMemory.munmap(first, bytes, errno));
            assertEquals(0, LibcMemory.munmap(second, bytes, errno));
            assertEquals(0, Libc.close(fd, errno));
        }
    }

    @Test
    void aUnixSocketNamesItsPeersProcess()
    {
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            MemorySegment address = arena.allocate(LibcSockets.SOCKADDR_UN_BYTES);
            int length = LibcSockets.abstractAddress(address, ("kvbridge-libc-test-" + ProcessHandle.current().pid()).getBytes(StandardCharsets.US_ASCII));
            int listener = LibcSockets.socket(LibcSockets.AF_UNIX, LibcSockets.SOCK_SEQPACKET | LibcSockets.SOCK_CLOEXEC, 0, errno);
            assertTrue(listener >= 0, () -> "socket: " + Errno.describe(errno.last()));
            assertEquals(0, LibcSockets.bind(listener, address, length, errno));
            assertEquals(0, LibcSockets.listen(listener, 4, errno));
            int client = LibcSockets.socket(LibcSockets.AF_UNIX, LibcSockets.SOCK_SEQPACKET | LibcSockets.SOCK_CLOEXEC, 0, errno);
            assertEquals(0, LibcSockets.connect(client, address, length, errno));
            int accepted = LibcSockets.accept4(listener, LibcSockets.SOCK_CLOEXEC, errno);
            assertTrue(accepted >= 0, () -> "accept4: " + Errno.describe(errno.last()));

            int[] credentials = new int[2];
            assertEquals(0, LibcSockets.peerCredentials(accepted, credentials, arena.allocate(16), errno));
            assertEquals(Libc.getpid(), credentials[0]);
            assertEquals(Libc.geteuid(), credentials[1]);
            assertEquals(ProcessHandle.current().pid(), Libc.getpid());

            assertEquals(-1, LibcSockets.peerCredentials(-1, credentials, arena.allocate(16), errno));
            assertEquals(-1, credentials[0]);
            assertEquals(Errno.EBADF, errno.last());
            for (int fd : new int[] {accepted, client, listener}) {
                assertEquals(0, Libc.close(fd, errno));
            }
        }
    }

    @Test
    void errnoNamesMatchTheKernelHeaders() throws IOException
    {
        Path base = Path.of("/usr/include/asm-generic/errno-base.h");
        Path rest = Path.of("/usr/include/asm-generic/errno.h");
        assumeTrue(Files.isReadable(base) && Files.isReadable(rest), "the kernel headers are not installed");
        Pattern define = Pattern.compile("#define\\s+(E[A-Z0-9]+)\\s+(\\d+)");
        int checked = 0;
        for (Path header : new Path[] {base, rest}) {
            Matcher matcher = define.matcher(Files.readString(header));
            while (matcher.find()) {
                int number = Integer.parseInt(matcher.group(2));
                String name = Errno.name(number);
                if (!name.startsWith("errno ")) {
                    assertEquals(matcher.group(1), name, "errno " + number);
                    checked++;
                }
            }
        }
        assertTrue(checked >= 60, "only " + checked + " names checked");
        assertEquals("errno 4095", Errno.name(4095));
    }
}
