package io.kvbridge.backend.nixl;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.transport.InstanceGuard;
import io.kvbridge.transport.Registrations;
import java.util.ArrayList;
import java.util.List;

/**
 * The memory one {@code nixl} instance registered with its agent: host allocations as DRAM, device
 * allocations as VRAM with their device index. Memory a running transfer moves cannot be
 * deregistered; once deregistered, the lists that lie in it lose their NIXL handles.
 *
 * <p>Threads: changes run on the owner thread, which serialises them; the registrations are read
 * from any thread.
 */
final class NixlMemoryRegistry
{
    private final InstanceGuard guard;
    private final NixlOwner owner;
    private final Registrations<NixlRegistration> registrations;
    private final NixlTransfers transfers;
    private final NixlLists lists;

    NixlMemoryRegistry(InstanceGuard guard, NixlOwner owner, Registrations<NixlRegistration> registrations, NixlTransfers transfers, NixlLists lists)
    {
        this.guard = requireNonNull(guard, "guard is null");
        this.owner = requireNonNull(owner, "owner is null");
        this.registrations = requireNonNull(registrations, "registrations is null");
        this.transfers = requireNonNull(transfers, "transfers is null");
        this.lists = requireNonNull(lists, "lists is null");
    }

    void register(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        guard.checkOpen();
        owner.call(() -> {
            guard.checkOpen();
            registrations.checkFree(allocation);
            owner.agent().registerMemory(allocation.kind(), allocation.device(), allocation.address(), allocation.bytes());
            registrations.add(new NixlRegistration(allocation));
            return null;
        });
    }

    void deregister(Allocation allocation)
    {
        requireNonNull(allocation, "allocation is null");
        guard.checkOpen();
        owner.call(() -> {
            guard.checkOpen();
            NixlRegistration registration = registrations.find(allocation.address(), allocation.bytes(), allocation.kind(), allocation.device());
            if (registration == null || !registration.allocation().equals(allocation)) {
                // not registered exactly so: remove() refuses it with NOT_REGISTERED
                registrations.remove(allocation);
            }
            int touching = transfers.touching(registration);
            if (touching > 0) {
                throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, touching + " running transfer(s) still move bytes of " + allocation
                        + "; wait until they are terminal, or release them, before deregistering");
            }
            owner.agent().deregisterMemory(allocation.kind(), allocation.device(), allocation.address(), allocation.bytes());
            registrations.remove(allocation);
            lists.releaseHandlesIn(registration);
            return null;
        });
    }

    /** @return the registered allocations, sorted by address, for the metadata. */
    List<Allocation> allocations()
    {
        List<Allocation> allocations = new ArrayList<>();
        for (NixlRegistration registration : registrations.all()) {
            allocations.add(registration.allocation());
        }
        return allocations;
    }

    /**
     * Deregisters everything at close, going on past failures; owner thread only.
     *
     * @return the first failure, others suppressed in it, or null.
     */
    RuntimeException closeAll()
    {
        RuntimeException first = null;
        for (NixlRegistration registration : registrations.clear()) {
            Allocation allocation = registration.allocation();
            first = NixlShutdown.attempt(first,
                    () -> owner.agent().deregisterMemory(allocation.kind(), allocation.device(), allocation.address(), allocation.bytes()));
        }
        return first;
    }

    /** @return allocations registered. */
    int size()
    {
        return registrations.size();
    }
}
