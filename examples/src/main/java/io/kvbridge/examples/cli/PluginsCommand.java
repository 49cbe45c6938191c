package io.kvbridge.examples.cli;

import io.kvbridge.api.PluginInfo;
import io.kvbridge.core.plugin.PluginRegistry;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kvbridge plugins}: what was discovered, and why what cannot run cannot. */
@Command(name = "plugins", mixinStandardHelpOptions = true, description = "List the discovered transports and cache layouts.")
final class PluginsCommand implements Callable<Integer>
{
    @Spec
    private CommandSpec spec;

    @Option(names = "--json", description = "Print a JSON list of {kind, name, available, reasons, ...}.")
    private boolean json;

    @Override
    public Integer call()
    {
        List<PluginInfo> plugins = PluginRegistry.discover(PluginsCommand.class.getClassLoader()).describe();
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            List<Map<String, Object>> rows = new ArrayList<>();
            for (PluginInfo plugin : plugins) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("kind", plugin.kind().name().toLowerCase(java.util.Locale.ROOT));
                row.put("name", plugin.name());
                row.put("available", plugin.available());
                row.put("reasons", plugin.reasons());
                row.put("capabilities", plugin.capabilities().stream().map(Enum::name).sorted().toList());
                row.put("details", plugin.details());
                row.put("implementation", plugin.implementation());
                rows.add(row);
            }
            out.println(Json.write(rows));
            return 0;
        }
        out.printf("%-10s %-12s %-10s %s%n", "KIND", "NAME", "AVAILABLE", "DETAILS");
        for (PluginInfo plugin : plugins) {
            String kind = plugin.kind().name().toLowerCase(java.util.Locale.ROOT);
            String facts = plugin.available()
                    ? String.join(", ", plugin.details().entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList())
                    : "cannot run: " + String.join("; ", plugin.reasons());
            out.printf("%-10s %-12s %-10s %s%n", kind, plugin.name(), plugin.available() ? "yes" : "no", facts);
        }
        return 0;
    }
}
