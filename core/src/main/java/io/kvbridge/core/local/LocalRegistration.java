package io.kvbridge.core.local;

import io.kvbridge.spi.memory.Allocation;

/** One registered allocation; {@code live} turns false when it is deregistered or its owner closes. */
final class LocalRegistration
{
    final Allocation allocation;
    volatile boolean live = true;

    LocalRegistration(Allocation allocation)
    {
        this.allocation = allocation;
    }
}
