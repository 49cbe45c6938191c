package io.kvbridge.core.routing;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.planner.TransferEntry;
import java.util.List;
import java.util.stream.Stream;

/**
 * The pairing routing chose for two ranks.
 *
 * @param mode how the entries were paired.
 * @param entries the entries, in local order; empty only for a stage pair that shares no layer.
 */
public record Route(RoutingMode mode, List<TransferEntry> entries)
{
    /** Validates the values and copies the list. */
    public Route
    {
        requireNonNull(mode, "mode is null");
        entries = List.copyOf(requireNonNull(entries, "entries is null"));
    }

    /**
     * Returns the layers the entries move, in entry order.
     *
     * @return one name per entry under layer-name routing; the regions' members under index routing.
     */
    public List<String> layers()
    {
        return entries.stream().flatMap(entry -> entry.byLayer() ? Stream.of(entry.layer()) : entry.local().members().stream()).toList();
    }
}
