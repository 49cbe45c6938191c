package io.kvbridge.core.engine;

import java.util.List;

/**
 * The layers one producer rank announced computed for a request this consumer rank pulls layer by
 * layer: an announcement is taken whole or not at all, so a peer's mistake changes nothing. The
 * producer's all-done counts once every layer is announced too, whatever order the announcements
 * arrive in. Worker thread only.
 */
final class AnnouncedLayers
{
    private final StreamLayers layers;
    private final boolean[] announced;
    private int count;
    private boolean allClaimed;

    AnnouncedLayers(StreamLayers layers)
    {
        this.layers = layers;
        this.announced = new boolean[layers.count()];
    }

    /**
     * Records announced layers, all or none.
     *
     * @return null, or what is wrong with the announcement: a layer the producer rank does not hold,
     *     one announced before (or twice in it), anything once all layers are in, or all-done twice.
     */
    String announce(List<String> names, boolean all)
    {
        if (allSaid() || all && allClaimed) {
            return "it said all layers were computed before";
        }
        for (int n = 0; n < names.size(); n++) {
            int index = layers.indexOf(names.get(n));
            if (index < 0 || announced[index] || names.indexOf(names.get(n)) != n) {
                return "layer " + names.get(n) + " is not one of its layers " + layers.names() + ", or it was announced before";
            }
        }
        for (String name : names) {
            announced[layers.indexOf(name)] = true;
        }
        count += names.size();
        allClaimed |= all;
        return null;
    }

    boolean announced(int layer)
    {
        return announced[layer];
    }

    /** {@return whether the producer rank said all its layers are computed and every one was announced} */
    boolean allSaid()
    {
        return allClaimed && count == announced.length;
    }

    StreamLayers layers()
    {
        return layers;
    }
}
