package io.kvbridge.backend.nixl.ffm;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import java.util.Set;

/**
 * The backend plugins a NIXL installation offers, asked of a short-lived agent.
 *
 * @param plugins plugin names, as NIXL lists them.
 * @param ucxMemory memory kinds the UCX plugin registers; empty when it was not asked.
 * @param problems why the question could not be answered.
 */
public record NixlPluginReport(List<String> plugins, Set<MemoryKind> ucxMemory, List<String> problems)
{
    /** Validates and copies. */
    public NixlPluginReport
    {
        plugins = List.copyOf(requireNonNull(plugins, "plugins is null"));
        ucxMemory = Set.copyOf(requireNonNull(ucxMemory, "ucxMemory is null"));
        problems = List.copyOf(requireNonNull(problems, "problems is null"));
    }
}
