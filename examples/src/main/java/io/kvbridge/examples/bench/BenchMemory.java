package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.TransferBackend;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One side's buffer of a two-host bench, registered with its transport instance: host memory from
 * the transport's {@code allocate()} when it allocates memory it moves faster, else from this
 * process, registered; or device memory the transport allocates, filled and checked through a host
 * copy of the same size with the transport's host copies.
 */
final class BenchMemory implements AutoCloseable
{
    private final TransferBackend transport;
    private final Arena arena;
    private final Allocation allocation;
    /** The buffer itself (host memory), or the host copy of the device buffer. */
    private final MemorySegment host;

    private BenchMemory(TransferBackend transport, Arena arena, Allocation allocation, MemorySegment host)
    {
        this.transport = transport;
        this.arena = arena;
        this.allocation = allocation;
        this.host = host;
    }

    /**
     * Allocates and registers a buffer.
     *
     * @param transport the instance that moves it.
     * @param bytes its size, a multiple of 8.
     * @param transportMemory whether host memory comes from the transport's {@code allocate()}.
     * @param device the device of device memory, or -1 for host memory.
     * @return the buffer, zeroed.
     */
    static BenchMemory allocate(TransferBackend transport, long bytes, boolean transportMemory, int device)
    {
        requireNonNull(transport, "transport is null");
        Arena arena = Arena.ofShared();
        try {
            BenchMemory memory;
            if (device >= 0) {
                memory = new BenchMemory(transport, arena, transport.allocate(bytes, MemoryKind.DEVICE, device), arena.allocate(bytes, 4096));
            }
            else if (transportMemory) {
                Allocation allocation = transport.allocate(bytes, MemoryKind.HOST, 0);
                memory = new BenchMemory(transport, arena, allocation, MemorySegment.ofAddress(allocation.address()).reinterpret(bytes));
            }
            else {
                MemorySegment segment = arena.allocate(bytes, 4096);
                transport.register(Allocation.host(segment));
                memory = new BenchMemory(transport, arena, Allocation.host(segment), segment);
            }
            memory.clear();
            return memory;
        }
        catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** {@return the registered allocation} */
    Allocation allocation()
    {
        return allocation;
    }

    /** {@return whether the buffer is device memory} */
    boolean onDevice()
    {
        return allocation.kind() == MemoryKind.DEVICE;
    }

    /**
     * Writes the pattern of a seed over the first bytes of the buffer.
     *
     * @param seed the seed.
     * @param bytes how many, a multiple of 8.
     */
    void fill(long seed, long bytes)
    {
        MemorySegment part = host.asSlice(0, bytes);
        BenchPattern.fill(part, seed);
        if (onDevice()) {
            transport.copyFromHost(part, allocation, 0);
        }
    }

    /** Zeroes the whole buffer, so that bytes a transfer did not move cannot pass as moved. */
    void clear()
    {
        host.fill((byte) 0);
        if (onDevice()) {
            transport.copyFromHost(host, allocation, 0);
        }
    }

    /**
     * Checks the first bytes of the buffer against the pattern of a seed.
     *
     * @param seed the seed.
     * @param bytes how many, a multiple of 8.
     * @return the byte offset of the first word that differs, or -1.
     */
    long firstMismatch(long seed, long bytes)
    {
        MemorySegment part = host.asSlice(0, bytes);
        if (onDevice()) {
            transport.copyToHost(allocation, 0, part);
        }
        return BenchPattern.firstMismatch(part, seed);
    }

    @Override
    public void close()
    {
        try {
            transport.deregister(allocation);
        }
        finally {
            arena.close();
        }
    }
}
