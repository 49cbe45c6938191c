package io.kvbridge.api;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.Capability;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One discovered plugin, as {@code kvbridge plugins} shows it.
 *
 * @param kind transport or layout.
 * @param name the name it is selected by.
 * @param available whether it can run here (layouts always can).
 * @param reasons every reason it cannot run, each with its fix.
 * @param capabilities what a transport can do.
 * @param details facts such as the native library version.
 * @param implementation the factory class.
 * @param source where the factory was loaded from (jar or directory).
 */
public record PluginInfo(
        PluginKind kind,
        String name,
        boolean available,
        List<String> reasons,
        Set<Capability> capabilities,
        Map<String, String> details,
        String implementation,
        String source)
{
    /** Validates and copies. */
    public PluginInfo
    {
        requireNonNull(kind, "kind is null");
        requireNonNull(name, "name is null");
        reasons = List.copyOf(requireNonNull(reasons, "reasons is null"));
        capabilities = Set.copyOf(requireNonNull(capabilities, "capabilities is null"));
        details = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(requireNonNull(details, "details is null")));
        requireNonNull(implementation, "implementation is null");
        requireNonNull(source, "source is null");
    }
}
