package io.kvbridge.backend.nixl;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;

/** The allocations a peer registered, as its metadata announced them: primitive arrays, immutable. */
final class RegionTable
{
    static final RegionTable EMPTY = new RegionTable(new MemoryKind[0], new int[0], new long[0], new long[0]);

    private final MemoryKind[] kinds;
    private final int[] devices;
    private final long[] addresses;
    private final long[] lengths;

    RegionTable(MemoryKind[] kinds, int[] devices, long[] addresses, long[] lengths)
    {
        this.kinds = kinds;
        this.devices = devices;
        this.addresses = addresses;
        this.lengths = lengths;
    }

    static RegionTable of(List<Allocation> allocations)
    {
        int count = allocations.size();
        MemoryKind[] kinds = new MemoryKind[count];
        int[] devices = new int[count];
        long[] addresses = new long[count];
        long[] lengths = new long[count];
        for (int i = 0; i < count; i++) {
            Allocation allocation = allocations.get(i);
            kinds[i] = allocation.kind();
            devices[i] = allocation.device();
            addresses[i] = allocation.address();
            lengths[i] = allocation.bytes();
        }
        return new RegionTable(kinds, devices, addresses, lengths);
    }

    int size()
    {
        return addresses.length;
    }

    MemoryKind kind(int index)
    {
        return kinds[index];
    }

    int device(int index)
    {
        return devices[index];
    }

    long address(int index)
    {
        return addresses[index];
    }

    long length(int index)
    {
        return lengths[index];
    }

    /**
     * Finds the region holding a range, trying {@code hint} first since neighbouring descriptors
     * usually share one.
     *
     * @return the region's index, or -1.
     */
    int find(MemoryKind kind, int device, long address, long length, int hint)
    {
        if (hint >= 0 && hint < addresses.length && holds(hint, kind, device, address, length)) {
            return hint;
        }
        for (int i = 0; i < addresses.length; i++) {
            if (holds(i, kind, device, address, length)) {
                return i;
            }
        }
        return -1;
    }

    private boolean holds(int i, MemoryKind kind, int device, long address, long length)
    {
        return kinds[i] == kind && devices[i] == device && address >= addresses[i] && length <= lengths[i] && address - addresses[i] <= lengths[i] - length;
    }
}
