package io.kvbridge.discovery.etcd;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.etcd.jetcd.ByteSequence;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.discovery.DirectoryEntry;
import java.util.Locale;

/**
 * The key layout: {@code /kvbridge/engines/<engineId>/<ppRank>/<tpRank>}. Keys read back are
 * untrusted: one that does not parse, or names another engine than the prefix asked for, is refused.
 */
final class EtcdKeys
{
    static final String ROOT = "/kvbridge/engines/";
    /** The most ranks one engine may publish (and a resolve reads); 64 stages of 64 ranks. */
    static final int MAX_RANKS_PER_ENGINE = 4_096;
    private static final int MAX_COORDINATE = 65_535;

    private EtcdKeys()
    {
    }

    static ByteSequence enginePrefix(String engineId)
    {
        return ByteSequence.from(ROOT + DirectoryEntry.checkEngineId(engineId) + "/", UTF_8);
    }

    static ByteSequence key(DirectoryEntry entry)
    {
        return ByteSequence.from(ROOT + entry.engineId() + "/" + entry.ppRank() + "/" + entry.tpRank(), UTF_8);
    }

    /**
     * Rebuilds the entry a key and value read from etcd hold.
     *
     * @throws KvBridgeException with {@link ErrorCode#PROTOCOL_ERROR} naming the key when it is
     *     malformed, names another engine, or its value exceeds the limit.
     */
    static DirectoryEntry entry(String engineId, ByteSequence key, ByteSequence value, int maxEntryBytes)
    {
        String text = key.toString(UTF_8);
        String prefix = ROOT + engineId + "/";
        if (!text.startsWith(prefix)) {
            throw malformed(text, "it is not under " + prefix);
        }
        String[] parts = text.substring(prefix.length()).split("/", -1);
        if (parts.length != 2) {
            throw malformed(text, "expected " + prefix + "<ppRank>/<tpRank>");
        }
        int ppRank = coordinate(text, "ppRank", parts[0]);
        int tpRank = coordinate(text, "tpRank", parts[1]);
        // the size is known before a copy is made
        if (value.size() > maxEntryBytes) {
            throw new KvBridgeException(ErrorCode.PROTOCOL_ERROR, String.format(Locale.ROOT,
                    "etcd key %s holds %d bytes, over maxEntryBytes=%d: refused (a foreign writer, or an engine with a larger limit: raise"
                            + " discovery.maxEntryBytes on this engine to match)", text, value.size(), maxEntryBytes));
        }
        return new DirectoryEntry(engineId, ppRank, tpRank, value.getBytes());
    }

    private static int coordinate(String key, String name, String text)
    {
        if (text.isEmpty() || text.length() > 5 || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw malformed(key, name + "=" + text + " is not a decimal number");
        }
        int value = Integer.parseInt(text);
        if (value > MAX_COORDINATE) {
            throw malformed(key, name + "=" + value + " is over " + MAX_COORDINATE);
        }
        return value;
    }

    private static KvBridgeException malformed(String key, String reason)
    {
        String shown = key.length() <= 200 ? key : key.substring(0, 200) + "...";
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "etcd key " + shown + " is malformed: " + reason
                + " (something other than kvbridge writes under " + ROOT + ": remove the key)");
    }
}
