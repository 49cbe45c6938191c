package io.kvbridge.engine.jlama.layout;

import io.kvbridge.spi.PluginConfig;
import io.kvbridge.spi.Spi;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheLayoutFactory;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static java.util.Objects.requireNonNull;

/**
 * Creates the {@code jlama} layout. Options: {@code layers-per-page}, {@code tokens-per-page} and
 * {@code context-pages}, Jlama's page shape for the model (see
 * {@link io.kvbridge.engine.jlama.JlamaPageGeometry}); each is required. {@value #PAGES_HOLD}
 * ({@code stage} or {@code model}) says whose layers the pages hold (see {@link JlamaPaging}).
 */
public final class JlamaCacheLayoutFactory implements CacheLayoutFactory
{
    /**
     * The option saying whose layers Jlama's pages hold: {@code stage} (default; the stage's only)
     * or {@code model} (every layer; the memory given is each page's span of the stage's layers).
     */
    public static final String PAGES_HOLD = "pages-hold";

    /** Creates the factory; {@link java.util.ServiceLoader} finds it through {@code META-INF/services}. */
    public JlamaCacheLayoutFactory()
    {
    }

    @Override
    public String name()
    {
        return JlamaCacheLayout.NAME;
    }

    @Override
    public int spiVersion()
    {
        return Spi.VERSION;
    }

    @Override
    public CacheLayout create(Map<String, String> config)
    {
        PluginConfig options = new PluginConfig(name(), requireNonNull(config, "config is null"));
        for (String required : List.of("layers-per-page", "tokens-per-page", "context-pages")) {
            if (!config.containsKey(required)) {
                options.problem(required + " is required: Jlama's page shape for the model (JlamaPageGeometry.of(model) computes it)");
            }
        }
        int layers = options.intValue("layers-per-page", 0, 1, Integer.MAX_VALUE);
        int tokens = options.intValue("tokens-per-page", 0, 1, Integer.MAX_VALUE);
        int contextPages = options.intValue("context-pages", 0, 1, Integer.MAX_VALUE);
        // stage: the pages of a layer shard; model: pages of every layer, of which the stage's span is the memory
        String pagesHold = options.choice(PAGES_HOLD, "stage", Set.of("stage", "model"));
        options.finish();
        return new JlamaCacheLayout(new JlamaPaging(layers, tokens, contextPages, pagesHold.equals("model")));
    }

    @Override
    public String description()
    {
        return "Jlama's per-session KV pages [layers, K|V, tokens, heads x headSize]: key and value planes per layer, blocks in every page";
    }
}
