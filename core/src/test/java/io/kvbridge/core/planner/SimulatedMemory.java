package io.kvbridge.core.planner;

import io.kvbridge.transport.DescriptorPairs;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.memory.Allocation;
import java.util.Map;
import java.util.TreeMap;

/** Byte arrays standing in for the allocations of several ranks, addressed by absolute address. */
final class SimulatedMemory
{
    private final TreeMap<Long, byte[]> segments = new TreeMap<>();

    void add(CacheGeometry geometry)
    {
        for (Allocation allocation : geometry.allocations()) {
            segments.put(allocation.address(), new byte[Math.toIntExact(allocation.bytes())]);
        }
    }

    byte get(long address)
    {
        Map.Entry<Long, byte[]> segment = segmentOf(address, 1);
        return segment.getValue()[(int) (address - segment.getKey())];
    }

    void put(long address, byte value)
    {
        Map.Entry<Long, byte[]> segment = segmentOf(address, 1);
        segment.getValue()[(int) (address - segment.getKey())] = value;
    }

    void copy(long from, long to, long length)
    {
        Map.Entry<Long, byte[]> source = segmentOf(from, length);
        Map.Entry<Long, byte[]> target = segmentOf(to, length);
        System.arraycopy(source.getValue(), (int) (from - source.getKey()), target.getValue(), (int) (to - target.getKey()), (int) length);
    }

    void copyAll(DescriptorPairs pairs, boolean remoteToLocal)
    {
        for (int i = 0; i < pairs.size(); i++) {
            if (remoteToLocal) {
                copy(pairs.remoteAddress(i), pairs.localAddress(i), pairs.length(i));
            }
            else {
                copy(pairs.localAddress(i), pairs.remoteAddress(i), pairs.length(i));
            }
        }
    }

    /** Returns the bytes of the allocations of one geometry, concatenated. */
    byte[] image(CacheGeometry geometry)
    {
        int total = 0;
        for (Allocation allocation : geometry.allocations()) {
            total += Math.toIntExact(allocation.bytes());
        }
        byte[] image = new byte[total];
        int n = 0;
        for (Allocation allocation : geometry.allocations()) {
            byte[] bytes = segments.get(allocation.address());
            System.arraycopy(bytes, 0, image, n, bytes.length);
            n += bytes.length;
        }
        return image;
    }

    private Map.Entry<Long, byte[]> segmentOf(long address, long length)
    {
        Map.Entry<Long, byte[]> segment = segments.floorEntry(address);
        if (segment == null || address + length > segment.getKey() + segment.getValue().length) {
            throw new AssertionError("range [0x" + Long.toHexString(address) + ", +" + length + ") lies outside every simulated allocation");
        }
        return segment;
    }
}
