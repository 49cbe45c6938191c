package io.kvbridge.core.routing;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.Region;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The model's layers by global name: each layer's cache group and its position in model order. */
final class ModelLayers
{
    private final Map<String, LayerSpec> byName = new HashMap<>();
    private final Map<String, Integer> positions = new HashMap<>();

    ModelLayers(List<LayerSpec> layers)
    {
        requireNonNull(layers, "layers is null");
        for (int i = 0; i < layers.size(); i++) {
            LayerSpec layer = requireNonNull(layers.get(i), "layer is null");
            KvBridgeException.checkArgument(byName.putIfAbsent(layer.name(), layer) == null, "layer %s is listed twice in the model's layers", layer.name());
            positions.put(layer.name(), i);
        }
    }

    /** Checks that the list describes the geometry's model. */
    void checkDescribes(CacheGeometry geometry, String side)
    {
        KvBridgeException.check(byName.size() == geometry.model().layerCount(), ErrorCode.ROUTING_FAILED,
                "the model's layer list has %d layers but %s rank %s serves model %s with layerCount=%d; pass the layers of the model both engines serve",
                byName.size(), side, geometry.rank(), geometry.model().model(), geometry.model().layerCount());
    }

    /** Returns the cache group of a layer a region holds, checked against the geometry's groups. */
    int groupOf(String layer, CacheGeometry geometry, Region region, String side)
    {
        LayerSpec spec = byName.get(layer);
        if (spec == null) {
            throw failure(ErrorCode.ROUTING_FAILED, "%s region %s holds layer %s, which is not a layer of the model, so its cache group is unknown "
                    + "(expected: global layer names from the model, e.g. %s); check that both engines name layers alike", side, region.name(), layer,
                    byName.keySet().stream().sorted().limit(3).toList());
        }
        if (spec.groupId() >= geometry.groups().size()) {
            throw failure(ErrorCode.ROUTING_FAILED, "layer %s of %s region %s belongs to cache group %d, unknown to %s rank %s which has %d groups",
                    layer, side, region.name(), spec.groupId(), side, geometry.rank(), geometry.groups().size());
        }
        return spec.groupId();
    }

    /** Returns a layer's position in model order, or -1 for a name the model does not have. */
    int position(String layer)
    {
        return positions.getOrDefault(layer, -1);
    }

    /**
     * Maps every layer part a geometry holds ({@link #key}) to the index of its region: a geometry
     * holds a layer once, or once per plane.
     */
    static Map<String, Integer> regionsByLayer(CacheGeometry geometry)
    {
        Map<String, Integer> index = new HashMap<>();
        for (int r = 0; r < geometry.regions().size(); r++) {
            Region region = geometry.regions().get(r);
            for (String layer : region.members()) {
                index.put(key(layer, region.part()), r);
            }
        }
        return index;
    }

    /** The key of one part of a layer. */
    static String key(String layer, KvPart part)
    {
        return part == KvPart.JOINT ? layer : layer + '\u0000' + part.name();
    }

    static KvBridgeException failure(ErrorCode code, String format, Object... args)
    {
        return new KvBridgeException(code, String.format(Locale.ROOT, format, args));
    }
}
