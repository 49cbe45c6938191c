package io.kvbridge.core.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.function.Executable;

/** Builds malformed messages by editing the tree of a valid one, and checks the errors they cause. */
public final class Trees
{
    private Trees()
    {
    }

    /** A deep, mutable copy of a rank's metadata tree. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> tree(RankMetadata metadata)
    {
        return (Map<String, Object>) mutable(MetadataCodec.toTree(metadata));
    }

    public static Object mutable(Object value)
    {
        return switch (value) {
            case Map<?, ?> map -> {
                Map<String, Object> copy = new LinkedHashMap<>();
                map.forEach((key, entry) -> copy.put((String) key, mutable(entry)));
                yield copy;
            }
            case List<?> list -> {
                List<Object> copy = new ArrayList<>();
                list.forEach(entry -> copy.add(mutable(entry)));
                yield copy;
            }
            default -> value;
        };
    }

    @SuppressWarnings("unchecked")
    public static Map<String, Object> map(Object value)
    {
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    public static List<Object> list(Object value)
    {
        return (List<Object>) value;
    }

    /** Marks a key to remove in {@link #set}. */
    public static final Object REMOVE = new Object();

    /** Replaces the value at a path such as {@code regions[0].packed_members[1].layer}; {@link #REMOVE} removes it, null writes nil. */
    public static Map<String, Object> set(Map<String, Object> root, String path, Object value)
    {
        String[] parts = path.split("\\.");
        Map<String, Object> current = root;
        for (int i = 0; i < parts.length - 1; i++) {
            current = map(step(current, parts[i]));
        }
        if (value == REMOVE) {
            current.remove(parts[parts.length - 1]);
        }
        else {
            current.put(parts[parts.length - 1], value);
        }
        return root;
    }

    private static Object step(Map<String, Object> map, String part)
    {
        int bracket = part.indexOf('[');
        if (bracket < 0) {
            return map.get(part);
        }
        int index = Integer.parseInt(part.substring(bracket + 1, part.length() - 1));
        return list(map.get(part.substring(0, bracket))).get(index);
    }

    public static byte[] encode(Object tree)
    {
        return new WireWriter().value(tree).toByteArray();
    }

    /** Asserts a typed error whose message contains every fragment. */
    public static KvBridgeException assertError(ErrorCode code, Executable executable, String... fragments)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, executable);
        assertEquals(code, e.code(), e.getMessage());
        for (String fragment : fragments) {
            assertTrue(e.getMessage().contains(fragment), () -> "message lacks '" + fragment + "': " + e.getMessage());
        }
        return e;
    }
}
