package io.kvbridge.testkit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Memory one process shares with another at the same virtual address, on Linux: the target process
 * finds the file descriptor behind memory its transport allocated ({@code /proc/self/maps} and
 * {@code /proc/self/fd}), and the test process opens that descriptor through
 * {@code /proc/<pid>/fd/<n>} (allowed to a process that may ptrace the other, as a parent may under
 * Yama's {@code ptrace_scope=1}) and maps it {@code MAP_SHARED} with {@code MAP_FIXED_NOREPLACE} at
 * the same address, so descriptors built from it are valid in both processes and both see every byte.
 * Bound through FFM; loaded only by a suite whose target runs in a child process.
 */
final class SharedMappings
{
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_SHARED = 1;
    private static final int MAP_FIXED_NOREPLACE = 0x100000;
    private static final int EEXIST = 17;
    private static final long MAP_FAILED = -1L;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURED = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURED.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option ERRNO_OPTION = Linker.Option.captureCallState("errno");
    private static final MethodHandle OPEN = bind("open", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), ERRNO_OPTION,
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle MMAP = bind("mmap", FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG),
            ERRNO_OPTION);
    private static final MethodHandle MUNMAP = bind("munmap", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG), ERRNO_OPTION);
    private static final MethodHandle CLOSE = bind("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle STRERROR = bind("strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));

    private SharedMappings()
    {
    }

    private static MethodHandle bind(String function, FunctionDescriptor descriptor, Linker.Option... options)
    {
        MemorySegment symbol = LINKER.defaultLookup().find(function)
                .orElseThrow(() -> new IllegalStateException("the C library exports no " + function + "(); shared target memory needs Linux"));
        return LINKER.downcallHandle(symbol, descriptor, options);
    }

    /**
     * A file descriptor of the target process and where in its file an address lies.
     *
     * @param fd the descriptor's number in the target process.
     * @param offset the file offset of the address.
     */
    record SharedFile(int fd, long offset)
    {
    }

    /**
     * Finds, in this process, the descriptor of the file mapped shared at {@code [address, address + bytes)}.
     *
     * @throws IllegalStateException when the range is not one shared file mapping whose descriptor this process holds.
     */
    static SharedFile fileBehind(long address, long bytes)
    {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                // start-end perms offset dev inode [path]
                String[] fields = line.trim().split("\\s+", 6);
                String[] range = fields[0].split("-");
                long start = Long.parseUnsignedLong(range[0], 16);
                long end = Long.parseUnsignedLong(range[1], 16);
                if (Long.compareUnsigned(address, start) < 0 || Long.compareUnsigned(address, end) >= 0) {
                    continue;
                }
                long inode = Long.parseLong(fields[4]);
                String path = fields.length > 5 ? fields[5] : "";
                if (Long.compareUnsigned(address + bytes, end) > 0 || inode == 0 || fields[1].charAt(3) != 's') {
                    throw new IllegalStateException(String.format("memory at 0x%x (%d bytes) is not inside one shared file mapping (/proc/self/maps: %s); "
                            + "a target in a child process needs a transport whose allocate(HOST) maps a shareable file such as a memfd",
                            address, bytes, line));
                }
                return new SharedFile(descriptorOf(inode, path, address), Long.parseUnsignedLong(fields[2], 16) + (address - start));
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException("reading /proc/self/maps failed", e);
        }
        throw new IllegalStateException(String.format("no mapping of this process holds 0x%x", address));
    }

    private static int descriptorOf(long inode, String path, long address) throws IOException
    {
        try (DirectoryStream<Path> descriptors = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path descriptor : descriptors) {
                try {
                    if (Files.getAttribute(descriptor, "unix:ino") instanceof Long number && number == inode
                            && Files.readSymbolicLink(descriptor).toString().equals(path)) {
                        return Integer.parseInt(descriptor.getFileName().toString());
                    }
                }
                catch (IOException closedMeanwhile) {
                    // the directory stream's own descriptor, or one closed while listing: not the mapping's
                }
            }
        }
        throw new IllegalStateException(String.format("this process holds no descriptor of %s (inode %d) mapped at 0x%x: the transport closed it after "
                + "mapping, so the memory cannot be mapped in another process", path, inode, address));
    }

    /**
     * Maps the target's file at the target's address in this process.
     *
     * @param pid the target process.
     * @param file its descriptor and the file offset of {@code address}.
     * @param address where the target has it mapped; page-aligned.
     * @param bytes how many bytes.
     * @return false when part of the range is already mapped here, so another address must be tried.
     * @throws IllegalStateException when the descriptor cannot be opened or mapped for another reason.
     */
    static boolean mapAt(long pid, SharedFile file, long address, long bytes)
    {
        String path = "/proc/" + pid + "/fd/" + file.fd();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURED);
            int descriptor = (int) OPEN.invokeExact(state, arena.allocateFrom(path), O_RDWR | O_CLOEXEC, 0);
            if (descriptor < 0) {
                int errno = errno(state);
                throw new IllegalStateException("open(" + path + ") failed: errno " + errno + " (" + strerror(errno) + "); the test process opens its "
                        + "child's memory there, which needs the right to ptrace the child (Yama ptrace_scope 0 or 1, no container policy denying it)");
            }
            try {
                long mapped = (long) MMAP.invokeExact(state, address, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, descriptor,
                        file.offset());
                if (mapped == MAP_FAILED) {
                    int errno = errno(state);
                    if (errno == EEXIST) {
                        return false;
                    }
                    throw new IllegalStateException(String.format("mmap of %s (offset %d) at 0x%x, %d bytes, failed: errno %d (%s)", path,
                            file.offset(), address, bytes, errno, strerror(errno)));
                }
                if (mapped != address) {
                    // a kernel older than 4.17 takes the flag for a hint and maps elsewhere
                    unmap(mapped, bytes);
                    return false;
                }
                return true;
            }
            finally {
                // the mapping holds the file; close() of a descriptor just opened has nothing to report
                int ignored = (int) CLOSE.invokeExact(descriptor);
            }
        }
        catch (RuntimeException | Error e) {
            throw e;
        }
        catch (Throwable t) {
            throw new IllegalStateException("calling open/mmap through FFM failed", t);
        }
    }

    /** Removes a mapping {@link #mapAt} made. */
    static void unmap(long address, long bytes)
    {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURED);
            int rc = (int) MUNMAP.invokeExact(state, address, bytes);
            if (rc != 0) {
                int errno = errno(state);
                throw new IllegalStateException(String.format("munmap(0x%x, %d) failed: errno %d (%s)", address, bytes, errno, strerror(errno)));
            }
        }
        catch (RuntimeException | Error e) {
            throw e;
        }
        catch (Throwable t) {
            throw new IllegalStateException("calling munmap through FFM failed", t);
        }
    }

    /**
     * {@return the lowest start of this process's mappings that overlap {@code [address, address + bytes)},
     * or {@code address} when none does or the mappings cannot be read}
     */
    static long lowestStartOverlapping(long address, long bytes)
    {
        long lowest = address;
        try {
            for (String line : mapsOverlapping(address, bytes)) {
                long start = Long.parseUnsignedLong(line.substring(0, line.indexOf('-')), 16);
                lowest = Long.compareUnsigned(start, lowest) < 0 ? start : lowest;
            }
        }
        catch (UncheckedIOException e) {
            // unknown: the caller then spaces by a fixed size
        }
        return lowest;
    }

    /** Lists this process's mappings that overlap a range, for a message saying why it was taken. */
    static List<String> mappingsOverlapping(long address, long bytes)
    {
        try {
            return mapsOverlapping(address, bytes);
        }
        catch (UncheckedIOException e) {
            return List.of("(reading /proc/self/maps failed: " + e.getCause().getMessage() + ")");
        }
    }

    private static List<String> mapsOverlapping(long address, long bytes)
    {
        List<String> overlapping = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                String[] range = line.substring(0, line.indexOf(' ')).split("-");
                long start = Long.parseUnsignedLong(range[0], 16);
                long end = Long.parseUnsignedLong(range[1], 16);
                if (Long.compareUnsigned(start, address + bytes) < 0 && Long.compareUnsigned(address, end) < 0) {
                    overlapping.add(line);
                }
            }
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return overlapping;
    }

    private static int errno(MemorySegment state)
    {
        return (int) ERRNO.get(state, 0L);
    }

    private static String strerror(int errno)
    {
        try {
            MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
            return text.reinterpret(256).getString(0);
        }
        catch (Throwable t) {
            return "no description";
        }
    }
}
