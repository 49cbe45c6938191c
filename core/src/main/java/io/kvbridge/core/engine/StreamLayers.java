package io.kvbridge.core.engine;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.Region;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The layers one rank holds, numbered in the order its regions list them, so that a streamed
 * request keeps one bit per layer and a layer's name finds its number without allocating.
 */
final class StreamLayers
{
    private final List<String> names;
    private final Map<String, Integer> indices;

    StreamLayers(CacheGeometry geometry)
    {
        List<String> ordered = new ArrayList<>();
        Map<String, Integer> byName = new HashMap<>();
        for (Region region : geometry.regions()) {
            for (String layer : region.members()) {
                if (!byName.containsKey(layer)) {
                    byName.put(layer, ordered.size());
                    ordered.add(layer);
                }
            }
        }
        this.names = List.copyOf(ordered);
        this.indices = Map.copyOf(byName);
    }

    int count()
    {
        return names.size();
    }

    /** {@return the layer's number, or -1 when the rank does not hold it} */
    int indexOf(String layer)
    {
        // a null name is a layer the rank does not hold, refused with the request named
        Integer index = layer == null ? null : indices.get(layer);
        return index == null ? -1 : index;
    }

    String name(int layer)
    {
        return names.get(layer);
    }

    List<String> names()
    {
        return names;
    }
}
