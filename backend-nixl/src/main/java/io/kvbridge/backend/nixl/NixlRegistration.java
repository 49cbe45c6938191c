package io.kvbridge.backend.nixl;

import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.transport.Registration;

/**
 * One allocation registered with the instance's NIXL agent. NIXL keeps no handle per registration
 * (it deregisters by range), so the toolkit's liveness is all the transport keeps.
 */
final class NixlRegistration extends Registration
{
    NixlRegistration(Allocation allocation)
    {
        super(allocation);
    }
}
