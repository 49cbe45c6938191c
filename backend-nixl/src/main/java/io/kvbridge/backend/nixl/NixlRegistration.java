package io.kvbridge.backend.nixl;

import io.kvbridge.spi.memory.Allocation;

/** One registered allocation; {@code live} turns false when it is deregistered or its owner closes. */
final class NixlRegistration
{
    final Allocation allocation;
    volatile boolean live = true;

    NixlRegistration(Allocation allocation)
    {
        this.allocation = allocation;
    }
}
