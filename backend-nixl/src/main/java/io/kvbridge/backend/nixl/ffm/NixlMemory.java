package io.kvbridge.backend.nixl.ffm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Copies what NIXL hands back into Java values at once: borrowed pointers die with their owner. */
final class NixlMemory
{
    private NixlMemory()
    {
    }

    /** Copies a NUL-terminated UTF-8 string that NIXL owns. */
    static String string(MemorySegment pointer)
    {
        if (pointer.equals(MemorySegment.NULL)) {
            throw new AssertionError("NIXL returned a NULL string where the C API promises one");
        }
        return pointer.reinterpret(Long.MAX_VALUE).getString(0);
    }

    /** Copies {@code length} bytes that NIXL owns. */
    static byte[] bytes(MemorySegment pointer, long length)
    {
        if (length == 0) {
            return new byte[0];
        }
        if (length < 0 || length > Integer.MAX_VALUE - 8) {
            throw new AssertionError("NIXL returned " + length + " bytes, more than a Java array holds");
        }
        return pointer.reinterpret(length).toArray(ValueLayout.JAVA_BYTE);
    }
}
