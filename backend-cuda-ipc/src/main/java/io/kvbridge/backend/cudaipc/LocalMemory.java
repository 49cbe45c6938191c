package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_MEMHOSTREGISTER_PORTABLE;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_MEMORYTYPE_DEVICE;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_POINTER_ATTRIBUTE_RANGE_SIZE;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR;

import io.kvbridge.backend.cudaipc.CudaIpcMetadata.Export;
import io.kvbridge.backend.cudaipc.ffm.CudaDriver;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.transport.Registration;
import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import io.kvbridge.transport.libc.LibcMemory;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Local memory on the owner thread: checking what the engine registers against what the driver
 * says it is, choosing how each allocation is exported (detected, never configured), and the
 * memory the transport allocates itself. Every function here needs the instance's context current.
 */
final class LocalMemory
{
    private static final Logger LOG = LoggerFactory.getLogger(LocalMemory.class);

    /** How the transport allocated memory of its own, so it frees it the same way. */
    enum Owned
    {
        NONE, MEM_ALLOC, VMM, HOST_MEMFD
    }

    /** One registered allocation with how peers reach it. */
    static final class LocalRegistration extends Registration
    {
        final int id;
        final Export export;
        final long allocationBase;
        final long allocationBytes;
        final byte[] handle;
        /** The exported descriptor (VMM, shared host), owned here; -1 when none. */
        final int fd;
        final boolean pinned;
        final Owned owned;
        /** For VMM memory the transport allocated: the physical handle and the reserved range. */
        final long vmmHandle;

        LocalRegistration(Allocation allocation, int id, Export export, long allocationBase, long allocationBytes, byte[] handle, int fd, boolean pinned,
                Owned owned, long vmmHandle)
        {
            super(allocation);
            this.id = id;
            this.export = export;
            this.allocationBase = allocationBase;
            this.allocationBytes = allocationBytes;
            this.handle = handle;
            this.fd = fd;
            this.pinned = pinned;
            this.owned = owned;
            this.vmmHandle = vmmHandle;
        }

        CudaIpcMetadata.Region advertised()
        {
            Allocation a = allocation();
            return new CudaIpcMetadata.Region(id, export, a.device(), a.address(), a.bytes(), allocationBase, allocationBytes, handle);
        }
    }

    /** Memory the transport allocated, before it is registered. */
    record Allocated(Allocation allocation, Owned owned, int fd, long vmmHandle, long allocationBytes)
    {
    }

    private LocalMemory()
    {
    }

    /**
     * Checks an allocation against the driver and decides how it is exported.
     *
     * @param allocation what the engine declares.
     * @param id the region id peers will name it by.
     * @param instanceDevice the device the instance's context is on.
     * @param allocated set when the transport allocated it, else null.
     * @return the registration.
     * @throws KvBridgeException {@code MEMORY_KIND_UNSUPPORTED} naming the values and the fix when the
     *     driver disagrees with the declaration.
     */
    static LocalRegistration register(Allocation allocation, int id, int instanceDevice, Allocated allocated)
    {
        if (allocation.kind() == MemoryKind.DEVICE) {
            return registerDevice(allocation, id, instanceDevice, allocated);
        }
        return registerHost(allocation, id, allocated);
    }

    private static KvBridgeException refused(Allocation allocation, String problem)
    {
        return new KvBridgeException(ErrorCode.MEMORY_KIND_UNSUPPORTED, String.format(Locale.ROOT, "allocation address=0x%x bytes=%d declared %s device %d %s",
                allocation.address(), allocation.bytes(), allocation.kind(), allocation.device(), problem));
    }

    private static LocalRegistration registerDevice(Allocation allocation, int id, int instanceDevice, Allocated allocated)
    {
        if (allocation.device() != instanceDevice) {
            throw refused(allocation, "is on another device than this instance's device " + instanceDevice
                    + "; create a cuda-ipc instance with device=" + allocation.device() + " for it");
        }
        long[] value = new long[1];
        long address = allocation.address();
        int rc = CudaDriver.cuPointerGetAttribute(value, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address);
        if (rc != 0) {
            throw refused(allocation, "is not memory the CUDA driver knows: cuPointerGetAttribute(MEMORY_TYPE) returned " + rc + " ("
                    + CudaDriver.errorName(rc) + "); register device memory from cuMemAlloc or cuMemCreate+cuMemMap, or declare host memory as HOST");
        }
        if (value[0] != CU_MEMORYTYPE_DEVICE) {
            throw refused(allocation, "is host memory (CU_MEMORYTYPE=" + value[0] + "), not device memory; declare it HOST");
        }
        CudaDriver.check(CudaDriver.cuPointerGetAttribute(value, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address), "cuPointerGetAttribute",
                "reading the device ordinal of 0x" + Long.toHexString(address));
        if (value[0] != allocation.device()) {
            throw refused(allocation, "lies on device " + value[0] + "; declare device " + value[0]);
        }
        CudaDriver.check(CudaDriver.cuPointerGetAttribute(value, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, address), "cuPointerGetAttribute",
                "reading the allocation start of 0x" + Long.toHexString(address));
        long start = value[0];
        CudaDriver.check(CudaDriver.cuPointerGetAttribute(value, CU_POINTER_ATTRIBUTE_RANGE_SIZE, address), "cuPointerGetAttribute",
                "reading the allocation size of 0x" + Long.toHexString(address));
        long size = value[0];
        if (address < start || allocation.bytes() > start + size - address) {
            throw refused(allocation, String.format(Locale.ROOT, "crosses allocations: the driver's allocation holding it is [0x%x, 0x%x) but the "
                    + "registration ends at 0x%x; register each allocation separately", start, start + size, allocation.end()));
        }
        long[] handle = new long[1];
        if (CudaDriver.cuMemRetainAllocationHandle(handle, address) == 0) {
            // VMM memory: export the physical allocation as a POSIX fd when it was created exportable
            int[] fd = {-1};
            int exported = CudaDriver.cuMemExportToShareableHandle(fd, handle[0]);
            CudaDriver.cuMemRelease(handle[0]);
            if (exported != 0) {
                LOG.warn("VMM allocation at 0x{} cannot be exported (cuMemExportToShareableHandle returned {} ({})); peers in other processes cannot "
                        + "reach it: create it with requestedHandleTypes=CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", Long.toHexString(start), exported,
                        CudaDriver.errorName(exported));
                return new LocalRegistration(allocation, id, Export.DEVICE_PRIVATE, start, size, new byte[0], -1, false, owned(allocated), vmm(allocated));
            }
            return new LocalRegistration(allocation, id, Export.VMM_FD, start, size, new byte[0], fd[0], false, owned(allocated), vmm(allocated));
        }
        byte[] ipc = new byte[CudaIpcMetadata.HANDLE_BYTES];
        rc = CudaDriver.cuIpcGetMemHandle(ipc, start);
        if (rc != 0) {
            LOG.warn("device allocation at 0x{} has no legacy IPC handle (cuIpcGetMemHandle returned {} ({})); peers in other processes cannot reach it",
                    Long.toHexString(start), rc, CudaDriver.errorName(rc));
            return new LocalRegistration(allocation, id, Export.DEVICE_PRIVATE, start, size, new byte[0], -1, false, owned(allocated), 0);
        }
        return new LocalRegistration(allocation, id, Export.LEGACY_IPC, start, size, ipc, -1, false, owned(allocated), 0);
    }

    private static Owned owned(Allocated allocated)
    {
        return allocated == null ? Owned.NONE : allocated.owned();
    }

    private static long vmm(Allocated allocated)
    {
        return allocated == null ? 0 : allocated.vmmHandle();
    }

    private static LocalRegistration registerHost(Allocation allocation, int id, Allocated allocated)
    {
        long[] value = new long[1];
        int rc = CudaDriver.cuPointerGetAttribute(value, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, allocation.address());
        if (rc == 0 && value[0] == CU_MEMORYTYPE_DEVICE) {
            throw refused(allocation, "is device memory (CU_MEMORYTYPE_DEVICE); declare it DEVICE with its device ordinal");
        }
        boolean pinned = false;
        if (rc != 0) {
            // pinned memory makes the copies true DMA; memory the driver already knows stays as it is
            int registered = CudaDriver.cuMemHostRegister(allocation.address(), allocation.bytes(), CU_MEMHOSTREGISTER_PORTABLE);
            pinned = registered == 0;
            if (registered != 0 && registered != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
                LOG.warn("pinning host memory at 0x{} ({} bytes) failed: cuMemHostRegister returned {} ({}); copies from it stay correct but are "
                        + "staged by the driver (raise RLIMIT_MEMLOCK to pin)", Long.toHexString(allocation.address()), allocation.bytes(), registered,
                        CudaDriver.errorName(registered));
            }
        }
        if (allocated != null && allocated.owned() == Owned.HOST_MEMFD) {
            return new LocalRegistration(allocation, id, Export.HOST_SHARED, allocation.address(), allocated.allocationBytes(), new byte[0],
                    allocated.fd(), pinned, Owned.HOST_MEMFD, 0);
        }
        return new LocalRegistration(allocation, id, Export.HOST_PRIVATE, allocation.address(), allocation.bytes(), new byte[0], -1, pinned, Owned.NONE, 0);
    }

    /**
     * Undoes a registration: unpins, closes the exported descriptor and frees what the transport allocated.
     */
    static void release(LocalRegistration registration, Errno errno)
    {
        Allocation allocation = registration.allocation();
        if (registration.pinned) {
            warnIf(CudaDriver.cuMemHostUnregister(allocation.address()), "cuMemHostUnregister", allocation);
        }
        if (registration.fd >= 0) {
            Libc.close(registration.fd, errno);
        }
        switch (registration.owned) {
            case NONE -> {
            }
            case MEM_ALLOC -> warnIf(CudaDriver.cuMemFree(allocation.address()), "cuMemFree", allocation);
            case VMM -> {
                warnIf(CudaDriver.cuMemUnmap(allocation.address(), registration.allocationBytes), "cuMemUnmap", allocation);
                warnIf(CudaDriver.cuMemAddressFree(allocation.address(), registration.allocationBytes), "cuMemAddressFree", allocation);
                warnIf(CudaDriver.cuMemRelease(registration.vmmHandle), "cuMemRelease", allocation);
            }
            case HOST_MEMFD -> LibcMemory.munmap(allocation.address(), registration.allocationBytes, errno);
        }
    }

    private static void warnIf(int rc, String function, Allocation allocation)
    {
        if (rc != 0) {
            LOG.warn("{} returned {} ({}) while releasing {}", function, rc, CudaDriver.errorName(rc), allocation);
        }
    }

    /**
     * Allocates memory peers in other processes can reach: VMM memory exportable as a POSIX fd where
     * the device supports it (or {@code cuMemAlloc} memory with a legacy handle), host memory in a
     * memfd whose descriptor can be passed.
     *
     * @param mode {@code vmm}, {@code legacy} or {@code auto} for device memory.
     */
    static Allocated allocate(long bytes, MemoryKind kind, int device, String mode, boolean vmmSupported, Errno errno)
    {
        if (kind == MemoryKind.HOST) {
            long size = (bytes + 4095) & ~4095L;
            int fd = LibcMemory.memfdCreate("kvbridge-cuda-ipc-host", errno);
            if (fd < 0 || LibcMemory.ftruncate(fd, size, errno) < 0) {
                int e = errno.last();
                if (fd >= 0) {
                    Libc.close(fd, errno);
                }
                throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "memfd_create/ftruncate of " + size + " host bytes failed: errno " + e + " ("
                        + Libc.strerror(e) + ")");
            }
            long address = LibcMemory.mmapShared(fd, size, errno);
            if (address == LibcMemory.MAP_FAILED) {
                int e = errno.last();
                Libc.close(fd, errno);
                throw new KvBridgeException(ErrorCode.NATIVE_ERROR, "mmap of " + size + " shared host bytes failed: errno " + e + " (" + Libc.strerror(e) + ")");
            }
            return new Allocated(new Allocation(address, bytes, MemoryKind.HOST, 0), Owned.HOST_MEMFD, fd, 0, size);
        }
        boolean vmm = mode.equals("vmm") || (mode.equals("auto") && vmmSupported);
        if (!vmm) {
            long[] pointer = new long[1];
            int rc = CudaDriver.cuMemAlloc(pointer, bytes);
            if (rc != 0) {
                throw CudaDriver.failure(ErrorCode.NATIVE_ERROR, rc, "cuMemAlloc_v2", "allocating " + bytes + " bytes on device " + device);
            }
            return new Allocated(new Allocation(pointer[0], bytes, MemoryKind.DEVICE, device), Owned.MEM_ALLOC, -1, 0, bytes);
        }
        long[] out = new long[1];
        CudaDriver.check(CudaDriver.cuMemGetAllocationGranularity(out, device), "cuMemGetAllocationGranularity", "device " + device);
        long granularity = Math.max(1, out[0]);
        long size = (bytes + granularity - 1) / granularity * granularity;
        int rc = CudaDriver.cuMemCreate(out, size, device);
        if (rc != 0) {
            throw CudaDriver.failure(ErrorCode.NATIVE_ERROR, rc, "cuMemCreate", "allocating " + size + " exportable bytes on device " + device);
        }
        long handle = out[0];
        rc = CudaDriver.cuMemAddressReserve(out, size);
        if (rc != 0) {
            CudaDriver.cuMemRelease(handle);
            throw CudaDriver.failure(ErrorCode.NATIVE_ERROR, rc, "cuMemAddressReserve", "reserving " + size + " bytes of address space");
        }
        long address = out[0];
        rc = CudaDriver.cuMemMap(address, size, handle);
        if (rc == 0) {
            rc = CudaDriver.cuMemSetAccess(address, size, device);
            if (rc != 0) {
                CudaDriver.cuMemUnmap(address, size);
            }
        }
        if (rc != 0) {
            CudaDriver.cuMemAddressFree(address, size);
            CudaDriver.cuMemRelease(handle);
            throw CudaDriver.failure(ErrorCode.NATIVE_ERROR, rc, "cuMemMap/cuMemSetAccess", "mapping " + size + " bytes on device " + device);
        }
        return new Allocated(new Allocation(address, bytes, MemoryKind.DEVICE, device), Owned.VMM, -1, handle, size);
    }

    /** Frees memory allocated here that never became a registration. */
    static void free(Allocated allocated, Errno errno)
    {
        LocalRegistration unregistered = new LocalRegistration(allocated.allocation(), -1, Export.HOST_PRIVATE, allocated.allocation().address(),
                allocated.allocationBytes(), new byte[0], allocated.fd(), false, allocated.owned(), allocated.vmmHandle());
        release(unregistered, errno);
    }
}
