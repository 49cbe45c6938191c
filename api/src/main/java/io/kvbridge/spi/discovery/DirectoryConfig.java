package io.kvbridge.spi.discovery;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Where a directory lives and how it behaves.
 *
 * @param scheme selects the {@link DirectoryFactory}, for example {@code etcd}.
 * @param endpoints the store's servers (unresolved); at least one.
 * @param leaseTtl how long published entries outlive their publisher's last keep-alive.
 * @param requestTimeout the deadline of each call to the store.
 * @param maxEntryBytes the largest value published or accepted; larger ones are refused.
 */
public record DirectoryConfig(String scheme, List<InetSocketAddress> endpoints, Duration leaseTtl, Duration requestTimeout, int maxEntryBytes)
{
    /** The default {@link #leaseTtl}. */
    public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(10);
    /** The default {@link #requestTimeout}: room for a first call, which sets up the connection, on a loaded host. */
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(5);
    /** The default {@link #maxEntryBytes}: room for the metadata of a rank with thousands of regions. */
    public static final int DEFAULT_MAX_ENTRY_BYTES = 1 << 20;

    private static final Pattern SCHEME = Pattern.compile("[a-z][a-z0-9+.-]{0,31}");

    /** Validates the values and copies the list. */
    public DirectoryConfig
    {
        requireNonNull(scheme, "scheme is null");
        endpoints = List.copyOf(requireNonNull(endpoints, "endpoints is null"));
        requireNonNull(leaseTtl, "leaseTtl is null");
        requireNonNull(requestTimeout, "requestTimeout is null");
        KvBridgeException.check(SCHEME.matcher(scheme).matches(), ErrorCode.CONFIG_INVALID, "discovery scheme=%s is malformed (expected e.g. etcd)", scheme);
        KvBridgeException.check(!endpoints.isEmpty(), ErrorCode.CONFIG_INVALID, "discovery names no endpoint (expected %s://host:port[,host:port...])",
                scheme);
        KvBridgeException.check(leaseTtl.compareTo(Duration.ofSeconds(1)) >= 0, ErrorCode.CONFIG_INVALID,
                "discovery leaseTtl=%s is below 1 s (the store counts leases in whole seconds)", leaseTtl);
        KvBridgeException.check(requestTimeout.isPositive(), ErrorCode.CONFIG_INVALID, "discovery requestTimeout=%s is not positive", requestTimeout);
        KvBridgeException.check(maxEntryBytes > 0, ErrorCode.CONFIG_INVALID, "discovery maxEntryBytes=%d is not positive", maxEntryBytes);
    }

    /**
     * Parses a location such as {@code etcd://10.0.0.1:2379,10.0.0.2:2379}, with the default lease,
     * timeout and size limit.
     *
     * @param location the location.
     * @return the configuration.
     * @throws KvBridgeException with {@link ErrorCode#CONFIG_INVALID} naming the value and the
     *     expected form when it is malformed.
     */
    public static DirectoryConfig parse(String location)
    {
        requireNonNull(location, "location is null");
        int separator = location.indexOf("://");
        if (separator <= 0) {
            throw invalid(location, "no scheme");
        }
        String scheme = location.substring(0, separator).toLowerCase(Locale.ROOT);
        String rest = location.substring(separator + 3);
        if (rest.endsWith("/")) {
            rest = rest.substring(0, rest.length() - 1);
        }
        if (rest.isEmpty()) {
            throw invalid(location, "no endpoint");
        }
        List<InetSocketAddress> endpoints = new ArrayList<>();
        for (String endpoint : rest.split(",", -1)) {
            endpoints.add(endpoint(location, endpoint.strip()));
        }
        return new DirectoryConfig(scheme, endpoints, DEFAULT_LEASE_TTL, DEFAULT_REQUEST_TIMEOUT, DEFAULT_MAX_ENTRY_BYTES);
    }

    private static InetSocketAddress endpoint(String location, String endpoint)
    {
        int colon = endpoint.lastIndexOf(':');
        if (colon <= 0 || colon == endpoint.length() - 1) {
            throw invalid(location, "endpoint '" + endpoint + "' is not host:port");
        }
        String host = endpoint.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        if (host.isEmpty() || host.chars().anyMatch(c -> c == '/' || c == '@' || c == '?' || Character.isWhitespace(c))) {
            throw invalid(location, "endpoint '" + endpoint + "' has a malformed host");
        }
        int port;
        try {
            port = Integer.parseInt(endpoint.substring(colon + 1));
        }
        catch (NumberFormatException e) {
            throw invalid(location, "endpoint '" + endpoint + "' has a port that is not a number");
        }
        if (port < 1 || port > 65_535) {
            throw invalid(location, "endpoint '" + endpoint + "' has port " + port + " outside 1..65535");
        }
        return InetSocketAddress.createUnresolved(host, port);
    }

    private static KvBridgeException invalid(String location, String reason)
    {
        return new KvBridgeException(ErrorCode.CONFIG_INVALID, String.format(Locale.ROOT,
                "discovery=%s is malformed: %s (expected scheme://host:port[,host:port...], for example etcd://127.0.0.1:2379)", location, reason));
    }

    /**
     * Returns a copy with other lease, timeout and size limit.
     *
     * @param leaseTtl how long entries outlive their publisher's last keep-alive.
     * @param requestTimeout the deadline of each call.
     * @param maxEntryBytes the largest value published or accepted.
     * @return the copy.
     */
    public DirectoryConfig with(Duration leaseTtl, Duration requestTimeout, int maxEntryBytes)
    {
        return new DirectoryConfig(scheme, endpoints, leaseTtl, requestTimeout, maxEntryBytes);
    }

    /** {@return the location in the form {@link #parse} reads} */
    public String location()
    {
        StringBuilder location = new StringBuilder(scheme).append("://");
        for (int i = 0; i < endpoints.size(); i++) {
            InetSocketAddress endpoint = endpoints.get(i);
            String host = endpoint.getHostString();
            location.append(i == 0 ? "" : ",").append(host.indexOf(':') >= 0 ? "[" + host + "]" : host).append(':').append(endpoint.getPort());
        }
        return location.toString();
    }
}
