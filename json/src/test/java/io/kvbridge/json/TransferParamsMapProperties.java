package io.kvbridge.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.math.BigInteger;
import java.util.AbstractList;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * {@link TransferParamsJson#fromMap} over hostile maps: a valid document with one value anywhere in
 * it replaced by a collection no JSON library makes (one that throws, lies about its size, has keys
 * that are not strings, or nests too deep), or with such a key added, is refused with
 * {@code PROTOCOL_ERROR} naming the field it was put under; and with any value of a wider pool put
 * anywhere, reading either succeeds or fails with {@code PROTOCOL_ERROR}, never with another exception.
 */
final class TransferParamsMapProperties
{
    private static final TransferParams PARAMS = new TransferParams("prefill-0", "req-1",
            List.of(new SideChannelAddress("10.0.0.5", 5600), new SideChannelAddress("10.0.0.6", 5601)), 2, 2,
            BlockIds.of(new int[] {1, 2, 3}, new int[] {7, 8}), EnumSet.of(TransferMode.PUSH, TransferMode.PULL), 30_000, 81_234_567_890L,
            List.of(0x9f86d081884c7d65L, TransferParams.UNKNOWN_EPOCH));

    /** Where a value sits: its container and its key or index, and the top-level key it is under. */
    private record Slot(Object container, Object key, String topLevel)
    {
        @SuppressWarnings("unchecked")
        void set(Object value)
        {
            if (container instanceof Map<?, ?> map) {
                ((Map<Object, Object>) map).put(key, value);
            }
            else {
                ((List<Object>) container).set((Integer) key, value);
            }
        }
    }

    @Property(tries = 400)
    void aCollectionNoJsonLibraryMakesIsRefusedNamingItsField(@ForAll long seed)
    {
        Random random = new Random(seed);
        Map<String, Object> map = document();
        List<Slot> slots = new ArrayList<>();
        slots(map, "", slots);
        Object hostile = hostile(random);
        String field;
        if (random.nextInt(4) == 0) {
            // a key that is not a string, added to the document or to one of its objects
            List<Slot> objects = slots.stream().filter(slot -> slotValue(slot) instanceof Map<?, ?>).toList();
            int pick = random.nextInt(objects.size() + 1);
            @SuppressWarnings("unchecked")
            Map<Object, Object> target = pick == objects.size() ? rawMap(map) : (Map<Object, Object>) slotValue(objects.get(pick));
            target.put(random.nextBoolean() ? (Object) 7 : (Object) true, "x");
            field = pick == objects.size() ? "kv_transfer_params" : objects.get(pick).topLevel();
        }
        else {
            Slot slot = slots.get(random.nextInt(slots.size()));
            slot.set(hostile);
            field = slot.topLevel();
        }
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> TransferParamsJson.fromMap(map), () -> "seed " + seed + ": " + map.keySet());
        assertEquals(ErrorCode.PROTOCOL_ERROR, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains(field), () -> "seed " + seed + ": " + field + " is not named in " + e.getMessage());
    }

    @Property(tries = 400)
    void anyValueAnywhereIsReadOrRefusedAsAProtocolError(@ForAll long seed)
    {
        Random random = new Random(seed);
        Map<String, Object> map = document();
        for (int change = 0; change <= random.nextInt(3); change++) {
            List<Slot> slots = new ArrayList<>();
            slots(map, "", slots);
            slots.get(random.nextInt(slots.size())).set(anyValue(random));
        }
        try {
            TransferParams read = TransferParamsJson.fromMap(map);
            assertEquals(read, TransferParamsJson.read(TransferParamsJson.write(read)));
        }
        catch (KvBridgeException e) {
            assertEquals(ErrorCode.PROTOCOL_ERROR, e.code(), e::getMessage);
        }
        catch (RuntimeException | Error e) {
            fail("seed " + seed + ": " + e + " escaped from " + map, e);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<Object, Object> rawMap(Map<String, Object> map)
    {
        return (Map<Object, Object>) (Map<?, ?>) map;
    }

    private static Object slotValue(Slot slot)
    {
        return slot.container() instanceof Map<?, ?> map ? map.get(slot.key()) : ((List<?>) slot.container()).get((Integer) slot.key());
    }

    /** {@return the valid document, in collections of our own that a test may change} */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> document()
    {
        return (Map<String, Object>) mutable(TransferParamsJson.toMap(PARAMS));
    }

    private static Object mutable(Object value)
    {
        if (value instanceof Map<?, ?> map) {
            Map<Object, Object> copy = new LinkedHashMap<>();
            map.forEach((key, inner) -> copy.put(key, mutable(inner)));
            return copy;
        }
        if (value instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(inner -> copy.add(mutable(inner)));
            return copy;
        }
        return value;
    }

    /** Every value under the document's own collections (never inside a value put there). */
    private static void slots(Object container, String topLevel, List<Slot> into)
    {
        if (container instanceof LinkedHashMap<?, ?> map) {
            for (Object key : map.keySet()) {
                String top = topLevel.isEmpty() ? (String) key : topLevel;
                into.add(new Slot(map, key, top));
                slots(map.get(key), top, into);
            }
        }
        else if (container instanceof ArrayList<?> list) {
            for (int i = 0; i < list.size(); i++) {
                into.add(new Slot(list, i, topLevel));
                slots(list.get(i), topLevel, into);
            }
        }
    }

    /** A collection no JSON library makes, refused wherever it is. */
    private static Object hostile(Random random)
    {
        return switch (random.nextInt(6)) {
            case 0 -> new AbstractList<Object>()
            {
                // a view reporting more entries than memory holds
                @Override
                public Object get(int index)
                {
                    return 1L;
                }

                @Override
                public int size()
                {
                    return Integer.MAX_VALUE;
                }
            };
            case 1 -> new AbstractList<Object>()
            {
                @Override
                public Object get(int index)
                {
                    throw new IllegalStateException("closed");
                }

                @Override
                public int size()
                {
                    return 3;
                }
            };
            case 2 -> new AbstractMap<String, Object>()
            {
                @Override
                public Set<Entry<String, Object>> entrySet()
                {
                    throw new UnsupportedOperationException("entrySet");
                }
            };
            case 3 -> new HashMap<>(Map.of(42, "x"));
            case 4 -> new AbstractList<Object>()
            {
                // claims one entry and never ends
                @Override
                public Object get(int index)
                {
                    return 1L;
                }

                @Override
                public int size()
                {
                    return 1;
                }

                @Override
                public Iterator<Object> iterator()
                {
                    return new Iterator<>()
                    {
                        @Override
                        public boolean hasNext()
                        {
                            return true;
                        }

                        @Override
                        public Object next()
                        {
                            return 1L;
                        }
                    };
                }
            };
            default -> {
                Object nested = List.of(1L);
                for (int depth = 0; depth < 12; depth++) {
                    nested = List.of(nested);
                }
                yield nested;
            }
        };
    }

    private static Object anyValue(Random random)
    {
        return switch (random.nextInt(16)) {
            case 0 -> null;
            case 1 -> new Object();
            case 2 -> Double.NaN;
            case 3 -> -1;
            case 4 -> BigInteger.ONE.shiftLeft(70);
            case 5 -> "a\u0000b";
            case 6 -> "x/y";
            case 7 -> List.of();
            case 8 -> Map.of();
            case 9 -> true;
            case 10 -> 2.5;
            case 11 -> (short) 3;
            case 12 -> Long.MAX_VALUE;
            case 13 -> "push";
            case 14 -> List.of(List.of(1, 2), List.of(3));
            default -> hostile(random);
        };
    }
}
