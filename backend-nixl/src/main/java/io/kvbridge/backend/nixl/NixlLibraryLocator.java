package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Finds {@code libnixl_capi.so}: in a configured file or directory when one is given, otherwise in
 * {@code java.library.path}, {@code LD_LIBRARY_PATH}, {@code $NIXL_PREFIX}, NIXL's install
 * prefixes and the dynamic linker's directories.
 */
final class NixlLibraryLocator
{
    static final String FILE_NAME = "libnixl_capi.so";

    /** Where NIXL installs itself (meson's default prefix and NVIDIA's containers), then the system's. */
    static final List<Path> SYSTEM_DIRECTORIES = List.of(
            Path.of("/usr/local/nixl/lib/x86_64-linux-gnu"), Path.of("/usr/local/nixl/lib64"), Path.of("/usr/local/nixl/lib"),
            Path.of("/opt/nvidia/nvda_nixl/lib/x86_64-linux-gnu"), Path.of("/opt/nvidia/nvda_nixl/lib64"),
            Path.of("/usr/local/lib/x86_64-linux-gnu"), Path.of("/usr/local/lib"),
            Path.of("/usr/lib/x86_64-linux-gnu"), Path.of("/usr/lib64"), Path.of("/usr/lib"), Path.of("/lib/x86_64-linux-gnu"));

    static final Path LD_SO_CONF_DIRECTORY = Path.of("/etc/ld.so.conf.d");

    /**
     * The outcome of a search.
     *
     * @param library the file found, if any.
     * @param searched every candidate file looked at, in order.
     * @param configured true when the location came from configuration, which is then the only place looked.
     */
    record Location(Optional<Path> library, List<Path> searched, boolean configured)
    {
        Location
        {
            requireNonNull(library, "library is null");
            searched = List.copyOf(requireNonNull(searched, "searched is null"));
        }
    }

    private NixlLibraryLocator()
    {
    }

    /**
     * Searches for the library.
     *
     * @param configured a file or directory given by configuration, or null.
     * @param environment the process environment.
     * @param javaLibraryPath the {@code java.library.path} property, or null.
     * @param systemDirectories directories to look in last.
     * @param ldSoConfDirectory the dynamic linker's configuration folder, read for more directories.
     * @return where it was found, or everywhere it was looked for.
     */
    static Location locate(String configured, Map<String, String> environment, String javaLibraryPath, List<Path> systemDirectories,
            Path ldSoConfDirectory)
    {
        if (configured != null && !configured.isBlank()) {
            Path candidate;
            try {
                Path given = Path.of(configured.trim());
                candidate = Files.isDirectory(given) ? given.resolve(FILE_NAME) : given;
            }
            catch (InvalidPathException e) {
                return new Location(Optional.empty(), List.of(), true);
            }
            return new Location(Files.isRegularFile(candidate) ? Optional.of(candidate) : Optional.empty(), List.of(candidate), true);
        }
        Set<Path> directories = new LinkedHashSet<>();
        addPathList(directories, javaLibraryPath);
        addPathList(directories, environment.get("LD_LIBRARY_PATH"));
        String prefix = environment.get("NIXL_PREFIX");
        if (prefix != null && !prefix.isBlank()) {
            for (String lib : List.of("lib/x86_64-linux-gnu", "lib64", "lib")) {
                addDirectory(directories, prefix + File.separator + lib);
            }
        }
        directories.addAll(systemDirectories);
        directories.addAll(linkerDirectories(ldSoConfDirectory));
        List<Path> searched = new ArrayList<>();
        for (Path directory : directories) {
            Path candidate = directory.resolve(FILE_NAME);
            searched.add(candidate);
            if (Files.isRegularFile(candidate)) {
                return new Location(Optional.of(candidate), searched, false);
            }
        }
        return new Location(Optional.empty(), searched, false);
    }

    private static void addPathList(Set<Path> directories, String pathList)
    {
        if (pathList == null) {
            return;
        }
        for (String entry : pathList.split(File.pathSeparator)) {
            addDirectory(directories, entry);
        }
    }

    private static void addDirectory(Set<Path> directories, String entry)
    {
        if (entry.isBlank()) {
            return;
        }
        try {
            directories.add(Path.of(entry.trim()));
        }
        catch (InvalidPathException ignored) {
            // not a path on this system: nothing to search there
        }
    }

    /** Reads the absolute directories listed in {@code /etc/ld.so.conf.d/*.conf}. */
    private static List<Path> linkerDirectories(Path confDirectory)
    {
        List<Path> directories = new ArrayList<>();
        if (!Files.isDirectory(confDirectory)) {
            return directories;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(confDirectory, "*.conf")) {
            for (Path file : files) {
                for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                    String entry = line.strip();
                    if (entry.startsWith("/")) {
                        directories.add(Path.of(entry));
                    }
                }
            }
        }
        catch (IOException | InvalidPathException | SecurityException ignored) {
            // an unreadable linker configuration only narrows the search
        }
        return directories;
    }

    /**
     * Reads the NIXL version from the {@code nixl.pc} pkg-config file installed next to the library;
     * the C API itself reports none.
     *
     * @param library the library file.
     * @return the version, if a readable {@code nixl.pc} names one.
     */
    static Optional<String> version(Path library)
    {
        Path directory = library.toAbsolutePath().getParent();
        if (directory == null) {
            return Optional.empty();
        }
        List<Path> candidates = new ArrayList<>(List.of(directory.resolve("pkgconfig").resolve("nixl.pc")));
        if (directory.getParent() != null) {
            candidates.add(directory.getParent().resolve("pkgconfig").resolve("nixl.pc"));
        }
        for (Path pc : candidates) {
            try {
                if (Files.isRegularFile(pc)) {
                    for (String line : Files.readAllLines(pc, StandardCharsets.UTF_8)) {
                        if (line.startsWith("Version:")) {
                            return Optional.of(line.substring("Version:".length()).strip());
                        }
                    }
                }
            }
            catch (IOException | SecurityException ignored) {
                // no version then: the probe says so
            }
        }
        return Optional.empty();
    }
}
