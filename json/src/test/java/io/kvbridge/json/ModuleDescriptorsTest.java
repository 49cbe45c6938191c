package io.kvbridge.json;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.TransferParams;
import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * The split this module exists for, read from the compiled descriptors (tests run on the class path,
 * where no module boundary holds): the api requires nothing but the JDK, and this module exports
 * its entry point to everyone and its reader and writer to core alone.
 */
final class ModuleDescriptorsTest
{
    @Test
    void apiDependsOnTheJdkOnly()
            throws IOException, URISyntaxException
    {
        ModuleDescriptor api = descriptorOf(TransferParams.class);
        assertEquals("io.kvbridge.api", api.name());
        assertEquals(Set.of("java.base"), names(api.requires()), "io.kvbridge.api must require no library: JSON belongs to io.kvbridge.json");
    }

    @Test
    void exportsTheCodecToAllAndItsMachineryToCoreOnly()
            throws IOException, URISyntaxException
    {
        ModuleDescriptor json = descriptorOf(TransferParamsJson.class);
        assertEquals("io.kvbridge.json", json.name());
        Map<String, Set<String>> exports = new TreeMap<>();
        for (ModuleDescriptor.Exports export : json.exports()) {
            exports.put(export.source(), new TreeSet<>(export.targets()));
        }
        assertEquals(Map.of("io.kvbridge.json", Set.of(), "io.kvbridge.json.internal", Set.of("io.kvbridge.core")), exports);
        assertEquals(Set.of("java.base", "io.kvbridge.api", "com.fasterxml.jackson.core"), names(json.requires()));
        ModuleDescriptor.Requires api = json.requires().stream().filter(requires -> requires.name().equals("io.kvbridge.api")).findFirst().orElseThrow();
        assertEquals(Set.of(ModuleDescriptor.Requires.Modifier.TRANSITIVE), api.modifiers(),
                "TransferParamsJson's signatures name api types: a router that requires io.kvbridge.json must read io.kvbridge.api");
    }

    private static Set<String> names(Set<ModuleDescriptor.Requires> requires)
    {
        Set<String> names = new TreeSet<>();
        requires.forEach(require -> names.add(require.name()));
        return names;
    }

    /** Reads module-info.class from the directory or jar the class was loaded from. */
    private static ModuleDescriptor descriptorOf(Class<?> type)
            throws IOException, URISyntaxException
    {
        Path location = Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        if (Files.isDirectory(location)) {
            try (InputStream in = Files.newInputStream(location.resolve("module-info.class"))) {
                return ModuleDescriptor.read(in);
            }
        }
        try (JarFile jar = new JarFile(location.toFile()); InputStream in = jar.getInputStream(jar.getEntry("module-info.class"))) {
            return ModuleDescriptor.read(in);
        }
    }
}
