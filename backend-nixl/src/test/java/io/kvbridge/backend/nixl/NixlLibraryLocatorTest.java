package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Where the library is looked for, in which order, and how its version is read. */
@Timeout(10)
final class NixlLibraryLocatorTest
{
    @TempDir
    Path root;

    private Path libraryIn(String directory) throws IOException
    {
        Path folder = Files.createDirectories(root.resolve(directory));
        return Files.writeString(folder.resolve(NixlLibraryLocator.FILE_NAME), "");
    }

    private NixlLibraryLocator.Location search(Map<String, String> environment, String javaLibraryPath)
    {
        return NixlLibraryLocator.locate(null, environment, javaLibraryPath, List.of(root.resolve("system")), root.resolve("ld.so.conf.d"));
    }

    @Test
    void configuredDirectoryOrFileIsTheOnlyPlaceLooked() throws IOException
    {
        Path library = libraryIn("configured");
        libraryIn("system");
        assertEquals(Optional.of(library), NixlLibraryLocator.locate(library.getParent().toString(), Map.of(), null, List.of(), root).library());
        assertEquals(Optional.of(library), NixlLibraryLocator.locate(library.toString(), Map.of(), null, List.of(), root).library());
        NixlLibraryLocator.Location missing = NixlLibraryLocator.locate(root.resolve("nowhere").toString(), Map.of(), null, List.of(root.resolve("system")), root);
        assertEquals(Optional.empty(), missing.library());
        assertTrue(missing.configured());
        assertEquals(List.of(root.resolve("nowhere")), missing.searched());
    }

    @Test
    void searchFollowsJavaLibraryPathThenLdLibraryPathThenPrefixThenSystem() throws IOException
    {
        Path system = libraryIn("system");
        Path prefixed = libraryIn("prefix/lib/x86_64-linux-gnu");
        Path ld = libraryIn("ld");
        Path java = libraryIn("java");
        Map<String, String> environment = Map.of("LD_LIBRARY_PATH", root.resolve("empty") + ":" + root.resolve("ld"), "NIXL_PREFIX", root.resolve("prefix").toString());
        assertEquals(Optional.of(java), search(environment, root.resolve("java").toString()).library());
        assertEquals(Optional.of(ld), search(environment, root.resolve("empty").toString()).library());
        assertEquals(Optional.of(prefixed), search(Map.of("NIXL_PREFIX", root.resolve("prefix").toString()), null).library());
        assertEquals(Optional.of(system), search(Map.of(), null).library());
    }

    @Test
    void dynamicLinkerDirectoriesAreSearched() throws IOException
    {
        Path library = libraryIn("linker");
        Files.createDirectories(root.resolve("ld.so.conf.d"));
        Files.writeString(root.resolve("ld.so.conf.d").resolve("nixl.conf"), "# NIXL\n" + library.getParent() + "\ninclude other\n");
        assertEquals(Optional.of(library), search(Map.of(), null).library());
    }

    @Test
    void nothingFoundListsEveryCandidate()
    {
        NixlLibraryLocator.Location location = search(Map.of("LD_LIBRARY_PATH", "/no/such/dir"), null);
        assertEquals(Optional.empty(), location.library());
        assertEquals(List.of(Path.of("/no/such/dir", NixlLibraryLocator.FILE_NAME), root.resolve("system").resolve(NixlLibraryLocator.FILE_NAME)),
                location.searched());
    }

    @Test
    void versionComesFromTheInstalledPkgConfigFile() throws IOException
    {
        Path library = libraryIn("usr/lib/x86_64-linux-gnu");
        assertEquals(Optional.empty(), NixlLibraryLocator.version(library));
        Path pkgconfig = Files.createDirectories(library.getParent().resolve("pkgconfig"));
        Files.writeString(pkgconfig.resolve("nixl.pc"), "prefix=/usr\nName: nixl\nVersion: 1.4.0\n");
        assertEquals(Optional.of("1.4.0"), NixlLibraryLocator.version(library));
    }
}
