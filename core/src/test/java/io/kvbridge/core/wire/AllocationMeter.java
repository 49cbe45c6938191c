package io.kvbridge.core.wire;

import java.lang.management.ManagementFactory;

/** Reads how many bytes the current thread has allocated, to prove a refusal allocated nothing large. */
public final class AllocationMeter
{
    private static final com.sun.management.ThreadMXBean THREADS = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private AllocationMeter()
    {
    }

    public static long allocatedBytes()
    {
        return THREADS.getCurrentThreadAllocatedBytes();
    }
}
