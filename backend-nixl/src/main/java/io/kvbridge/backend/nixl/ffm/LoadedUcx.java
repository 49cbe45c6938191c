package io.kvbridge.backend.nixl.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A UCX library ({@code libucp}) mapped into this process, and its version. NIXL's UCX plugin binds
 * {@code libucp.so.0} by soname, so it runs on whichever UCX the process loaded first: the system's,
 * if the {@code ucx} transport or the dynamic linker's search order got there before NIXL's own.
 * Read after NIXL listed its plugins, which loads the UCX plugin.
 *
 * @param library the mapped file.
 * @param version {@code major.minor.release} from {@code ucp_get_version}, when it could be read.
 * @param cudaModule whether UCX's CUDA transport module ({@code ucx/libuct_cuda.so}) is installed
 *     beside it, without which UCX registers device memory as host memory and NIXL refuses it.
 */
public record LoadedUcx(Path library, Optional<String> version, boolean cudaModule)
{
    private static final Path MAPS = Path.of("/proc/self/maps");

    /** Validates the fields. */
    public LoadedUcx
    {
        requireNonNull(library, "library is null");
        requireNonNull(version, "version is null");
    }

    /**
     * Lists the UCX libraries mapped into this process; loads nothing that is not loaded already.
     *
     * @return each mapped {@code libucp}, with its version; empty when none is, or the map cannot be read.
     */
    public static List<LoadedUcx> inThisProcess()
    {
        List<String> lines;
        try {
            lines = Files.readAllLines(MAPS);
        }
        catch (IOException | SecurityException e) {
            return List.of();
        }
        List<LoadedUcx> loaded = new ArrayList<>();
        for (Path library : mappedUcp(lines)) {
            loaded.add(new LoadedUcx(library, versionOf(library), hasCudaModule(library)));
        }
        return loaded;
    }

    /**
     * Finds the {@code libucp} files in the lines of a {@code /proc/<pid>/maps}.
     *
     * @param mapsLines the lines.
     * @return the distinct files, in order of appearance.
     */
    static List<Path> mappedUcp(List<String> mapsLines)
    {
        List<Path> found = new ArrayList<>();
        for (String line : mapsLines) {
            int slash = line.indexOf('/');
            if (slash < 0) {
                continue;
            }
            Path file = Path.of(line.substring(slash).strip());
            Path name = file.getFileName();
            if (name != null && name.toString().startsWith("libucp.so") && !found.contains(file)) {
                found.add(file);
            }
        }
        return found;
    }

    /**
     * Tells whether the version is known and older than {@code major.minor}.
     *
     * @param major major version.
     * @param minor minor version.
     * @return true when known and older.
     */
    public boolean olderThan(int major, int minor)
    {
        if (version.isEmpty()) {
            return false;
        }
        String[] parts = version.get().split("\\.");
        int actualMajor = Integer.parseInt(parts[0]);
        int actualMinor = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
        return actualMajor < major || (actualMajor == major && actualMinor < minor);
    }

    @Override
    public String toString()
    {
        return library + " (UCX " + version.orElse("version unknown") + (cudaModule ? ", with CUDA" : "") + ")";
    }

    private static boolean hasCudaModule(Path library)
    {
        Path modules = library.resolveSibling("ucx");
        try (var files = Files.list(modules)) {
            return files.anyMatch(file -> file.getFileName().toString().startsWith("libuct_cuda.so"));
        }
        catch (IOException | SecurityException e) {
            return false;
        }
    }

    private static Optional<String> versionOf(Path library)
    {
        try {
            // the library is mapped already: the dynamic linker hands back the loaded copy, it loads nothing
            SymbolLookup lookup = SymbolLookup.libraryLookup(library, Arena.global());
            Optional<MemorySegment> function = lookup.find("ucp_get_version");
            if (function.isEmpty()) {
                return Optional.empty();
            }
            MethodHandle getVersion = Linker.nativeLinker().downcallHandle(function.get(), FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
            try (Arena call = Arena.ofConfined()) {
                MemorySegment parts = call.allocate(JAVA_INT, 3);
                getVersion.invokeExact(parts, parts.asSlice(4), parts.asSlice(8));
                return Optional.of(parts.getAtIndex(JAVA_INT, 0) + "." + parts.getAtIndex(JAVA_INT, 1) + "." + parts.getAtIndex(JAVA_INT, 2));
            }
        }
        catch (Throwable t) {
            // unreadable version: reported as unknown, which decides nothing
            return Optional.empty();
        }
    }
}
