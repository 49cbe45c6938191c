package io.kvbridge.backend.tcp;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.transport.Registration;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * A registered allocation and the direct buffers over it that sockets read into and write from,
 * one per gibibyte (a buffer holds at most 2 GiB). They are made once at registration, so moving a
 * run allocates nothing: the owner positions a window for each read or write call and never keeps
 * one positioned between calls, which is why connections can share them.
 *
 * <p>Threads: made on any thread, its windows used by the owner thread only.
 */
final class TcpRegistration extends Registration
{
    static final int WINDOW_SHIFT = 30;

    private final long base;
    private final ByteBuffer[] windows;

    TcpRegistration(Allocation allocation)
    {
        super(allocation);
        this.base = allocation.address();
        long bytes = allocation.bytes();
        MemorySegment whole = MemorySegment.ofAddress(base).reinterpret(bytes);
        int count = (int) ((bytes + (1L << WINDOW_SHIFT) - 1) >>> WINDOW_SHIFT);
        windows = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            long start = (long) i << WINDOW_SHIFT;
            windows[i] = whole.asSlice(start, Math.min(1L << WINDOW_SHIFT, bytes - start)).asByteBuffer();
        }
    }

    /**
     * Positions the window holding {@code address} over at most {@code remaining} bytes from there
     * (fewer where the window ends first).
     *
     * @param address inside this registration.
     * @param remaining bytes wanted, positive.
     * @return the window, its position at {@code address}.
     */
    ByteBuffer window(long address, long remaining)
    {
        long offset = address - base;
        int index = (int) (offset >>> WINDOW_SHIFT);
        ByteBuffer window = windows[index];
        int position = (int) (offset - ((long) index << WINDOW_SHIFT));
        int capacity = window.capacity();
        window.limit(capacity).position(position);
        window.limit((int) Math.min(capacity, position + remaining));
        return window;
    }
}
