package io.kvbridge.backend.ucx;

import io.kvbridge.backend.ucx.ffm.UcpContext;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.transport.Registrations;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;

/**
 * The memory of one instance: {@code register()} maps caller memory with {@code ucp_mem_map},
 * {@code allocate()} lets UCX allocate it (staggered, see {@link AllocationStagger}), and
 * {@code deregister()} unmaps it, but only once no issued transfer uses it any more.
 *
 * <p>Threads: the mapping methods and the use counts run on the owner thread;
 * {@link #registrations()} and {@link #checkKind} may be used from any thread.
 */
final class UcxMemory
{
    // 2^62: no host maps more, and the staggered size cannot overflow
    static final long MAX_ALLOCATION_BYTES = 1L << 62;
    private static final SecureRandom STARTS = new SecureRandom();

    private static final byte[] NO_KEY = new byte[0];

    private final UcxWorker worker;
    private final boolean staggerAllocations;
    private final boolean publishKeys;
    private final AllocationStagger stagger = new AllocationStagger(STARTS.nextInt(AllocationStagger.OFFSETS));
    private final Registrations<UcxRegistration> registrations;

    // owner thread only: how many allocations allocate() made, which picks each one's offset
    private long allocations;
    // owner thread only: deregistered while issued transfers still read or write them
    private final List<UcxRegistration> unmapWhenIdle = new ArrayList<>();

    /**
     * @param publishKeys whether peers get remote keys for one-sided access ({@code access=registered});
     *         a granted instance packs none, so that no peer can address its memory past the grants.
     */
    UcxMemory(String owner, UcxWorker worker, boolean staggerAllocations, boolean publishKeys)
    {
        this.worker = worker;
        this.staggerAllocations = staggerAllocations;
        this.publishKeys = publishKeys;
        this.registrations = new Registrations<>(owner);
    }

    Registrations<UcxRegistration> registrations()
    {
        return registrations;
    }

    /** Refuses device memory; any thread. */
    void checkKind(MemoryKind kind, String what)
    {
        if (kind == MemoryKind.DEVICE) {
            String version = worker.version();
            // peers advertise host ranges only, so device memory could not be addressed remotely
            throw new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, "cannot " + what + " device memory: the ucx transport moves host memory only ("
                    + (worker.deviceMemory() ? "this UCX " + version + " could register CUDA memory, but" : "this UCX " + version + " has no CUDA support, and")
                    + " kvbridge does not advertise device ranges to peers yet); stage device blocks through host memory, or use a device transport");
        }
    }

    /** Maps caller memory; owner thread. */
    void register(Allocation allocation)
    {
        registrations.checkFree(allocation);
        add(allocation, UcpContext.memMap(worker.context(), allocation.address(), allocation.bytes()), false);
    }

    /** Lets UCX allocate host memory, starting a few pages into the mapping; owner thread. */
    Allocation allocate(long bytes)
    {
        long offset = staggerAllocations ? stagger.offset(bytes, allocations++) : 0;
        long memh = UcpContext.memAllocate(worker.context(), bytes + offset);
        Allocation allocation;
        try {
            allocation = new Allocation(UcpContext.memAddress(memh) + offset, bytes, MemoryKind.HOST, 0);
        }
        catch (RuntimeException e) {
            UcpContext.memUnmap(worker.context(), memh);
            throw e;
        }
        add(allocation, memh, true);
        return allocation;
    }

    private void add(Allocation allocation, long memh, boolean transportOwned)
    {
        try {
            registrations.add(new UcxRegistration(allocation, memh, publishKeys ? UcpContext.rkeyPack(worker.context(), memh) : NO_KEY, transportOwned));
        }
        catch (KvBridgeException e) {
            UcpContext.memUnmap(worker.context(), memh);
            throw e;
        }
    }

    /** Removes a registration, unmapping it now or once its transfers end; owner thread. */
    void deregister(Allocation allocation)
    {
        UcxRegistration registration = registrations.remove(allocation);
        if (registration.inFlight == 0) {
            unmap(registration);
        }
        else {
            // issued transfers still read or write it: unmap when they finish
            unmapWhenIdle.add(registration);
        }
    }

    /** Counts an issued transfer against the memory its local list lies in; owner thread. */
    void retain(UcxPreparedList local)
    {
        for (int i = 0; i < local.registrationCount(); i++) {
            ((UcxRegistration) local.registration(i)).inFlight++;
        }
    }

    /** Ends an issued transfer's use of its memory, unmapping what was deregistered meanwhile; owner thread. */
    void release(UcxPreparedList local)
    {
        for (int i = 0; i < local.registrationCount(); i++) {
            UcxRegistration registration = (UcxRegistration) local.registration(i);
            registration.inFlight--;
            if (!registration.live() && registration.inFlight == 0) {
                unmap(registration);
                unmapWhenIdle.remove(registration);
            }
        }
    }

    /** Unmaps everything; owner thread, at shutdown, once no operation can use the memory. */
    void unmapAll()
    {
        for (UcxRegistration registration : registrations.clear()) {
            unmap(registration);
        }
        for (UcxRegistration registration : unmapWhenIdle) {
            unmap(registration);
        }
        unmapWhenIdle.clear();
    }

    private void unmap(UcxRegistration registration)
    {
        if (!registration.unmapped) {
            registration.unmapped = true;
            UcpContext.memUnmap(worker.context(), registration.memh);
        }
    }
}
