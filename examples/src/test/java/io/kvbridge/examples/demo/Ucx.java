package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvbridge.api.PluginInfo;
import io.kvbridge.api.PluginKind;
import io.kvbridge.core.plugin.PluginRegistry;

/** Skips a test where the UCX transport cannot run, saying why (CI installs libucx0, so it runs there). */
public final class Ucx
{
    private Ucx()
    {
    }

    /** Skips the calling test unless the {@code ucx} transport is available. */
    public static void assumeAvailable()
    {
        PluginInfo ucx = PluginRegistry.discover(Ucx.class.getClassLoader()).describe().stream()
                .filter(plugin -> plugin.kind() == PluginKind.TRANSPORT && plugin.name().equals("ucx")).findFirst().orElseThrow();
        assumeTrue(ucx.available(), () -> "the ucx transport cannot run here: " + ucx.reasons());
    }
}
