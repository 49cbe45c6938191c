package io.kvbridge.spi.transfer;

import static java.util.Objects.requireNonNull;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Result of probing a transport: whether it can run here, every reason it cannot, what it can do,
 * and facts worth showing a user (library version, transports found, ...).
 *
 * @param available true when {@link TransferBackendFactory#create} can succeed.
 * @param reasons every reason it cannot run, each with how to fix it; empty when available.
 * @param capabilities what the transport can do when available.
 * @param details facts such as {@code version}, in insertion order.
 */
public record Availability(boolean available, List<String> reasons, Set<Capability> capabilities, Map<String, String> details)
{
    /** Validates and copies. */
    public Availability
    {
        reasons = List.copyOf(requireNonNull(reasons, "reasons is null"));
        capabilities = Set.copyOf(requireNonNull(capabilities, "capabilities is null"));
        details = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(requireNonNull(details, "details is null")));
        if (available && !reasons.isEmpty()) {
            throw new IllegalArgumentException("an available transport has no reasons against it, got " + reasons);
        }
        if (!available && reasons.isEmpty()) {
            throw new IllegalArgumentException("an unavailable transport must say why");
        }
    }

    /**
     * Reports an available transport.
     *
     * @param capabilities what it can do.
     * @param details facts worth showing.
     * @return the availability.
     */
    public static Availability available(Set<Capability> capabilities, Map<String, String> details)
    {
        return new Availability(true, List.of(), capabilities, details);
    }

    /**
     * Reports a transport that cannot run.
     *
     * @param reasons every reason, each with its fix.
     * @param details facts worth showing.
     * @return the availability.
     */
    public static Availability unavailable(List<String> reasons, Map<String, String> details)
    {
        return new Availability(false, reasons, Set.of(), details);
    }
}
