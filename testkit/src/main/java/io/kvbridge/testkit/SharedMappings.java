package io.kvbridge.testkit;

import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcMemory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
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
 * Calls the C library through the transport toolkit's one binding; loaded only by a suite whose target
 * runs in a child process.
 */
final class SharedMappings
{
    private SharedMappings()
    {
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
            Errno errno = new Errno(arena);
            int descriptor = Libc.open(path, Libc.O_RDWR | Libc.O_CLOEXEC, errno);
            if (descriptor < 0) {
                throw new IllegalStateException("open(" + path + ") failed: " + Errno.describe(errno.last()) + "; the test process opens its "
                        + "child's memory there, which needs the right to ptrace the child (Yama ptrace_scope 0 or 1, no container policy denying it)");
            }
            try {
                long mapped = LibcMemory.mmap(address, bytes, LibcMemory.PROT_READ | LibcMemory.PROT_WRITE,
                        LibcMemory.MAP_SHARED | LibcMemory.MAP_FIXED_NOREPLACE, descriptor, file.offset(), errno);
                if (mapped == LibcMemory.MAP_FAILED) {
                    if (errno.last() == Errno.EEXIST) {
                        return false;
                    }
                    throw new IllegalStateException(String.format("mmap of %s (offset %d) at 0x%x, %d bytes, failed: %s", path,
                            file.offset(), address, bytes, Errno.describe(errno.last())));
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
                Libc.close(descriptor, errno);
            }
        }
    }

    /** Removes a mapping {@link #mapAt} made. */
    static void unmap(long address, long bytes)
    {
        try (Arena arena = Arena.ofConfined()) {
            Errno errno = new Errno(arena);
            if (LibcMemory.munmap(address, bytes, errno) != 0) {
                throw new IllegalStateException(String.format("munmap(0x%x, %d) failed: %s", address, bytes, Errno.describe(errno.last())));
            }
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
}
