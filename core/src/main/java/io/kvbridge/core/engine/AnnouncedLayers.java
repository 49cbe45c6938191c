package io.kvbridge.core.engine;

import java.util.List;

/**
 * The layers one producer rank announced computed for a request this consumer rank pulls layer by
 * layer: an announcement is taken whole or not at all, so a peer's mistake changes nothing.
 * Worker thread only.
 */
final class AnnouncedLayers
{
    private final StreamLayers layers;
    private final boolean[] announced;
    private boolean allSaid;

    AnnouncedLayers(StreamLayers layers)
    {
        this.layers = layers;
        this.announced = new boolean[layers.count()];
    }

    /**
     * Records announced layers, all or none.
     *
     * @return null, or what is wrong with the announcement: a layer the producer rank does not hold,
     *     one announced before (or twice in it), anything after all-done, or all-done with a layer
     *     never announced.
     */
    String announce(List<String> names, boolean all)
    {
        if (allSaid) {
            return "it said all layers were computed before";
        }
        for (int n = 0; n < names.size(); n++) {
            int index = layers.indexOf(names.get(n));
            if (index < 0 || announced[index] || names.indexOf(names.get(n)) != n) {
                return "layer " + names.get(n) + " is not one of its layers " + layers.names() + ", or it was announced before";
            }
        }
        if (all) {
            for (int l = 0; l < announced.length; l++) {
                if (!announced[l] && !names.contains(layers.name(l))) {
                    return "it said all layers were computed, but layer " + layers.name(l) + " was never announced";
                }
            }
        }
        for (String name : names) {
            announced[layers.indexOf(name)] = true;
        }
        allSaid = all;
        return null;
    }

    boolean announced(int layer)
    {
        return announced[layer];
    }

    boolean allSaid()
    {
        return allSaid;
    }

    StreamLayers layers()
    {
        return layers;
    }
}
