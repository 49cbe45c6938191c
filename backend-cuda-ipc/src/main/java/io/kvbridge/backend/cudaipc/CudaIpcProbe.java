package io.kvbridge.backend.cudaipc;

import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CUDA_ERROR_NO_DEVICE;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING;
import static io.kvbridge.backend.cudaipc.ffm.CudaLayouts.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;

import io.kvbridge.backend.cudaipc.ffm.CudaDriver;
import io.kvbridge.backend.cudaipc.ffm.CudaMemcpyBatch;
import io.kvbridge.spi.transfer.Availability;
import io.kvbridge.spi.transfer.Capability;
import io.kvbridge.transport.NativeLibrary;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Decides whether the transport can run, in the order a user fixes things: switched off, native
 * access, the driver library, its version, a device, unified addressing and IPC support. Each reason
 * says what to do. Never throws for a missing or unusable driver; on a machine without a GPU,
 * {@code cuInit} answers {@code CUDA_ERROR_NO_DEVICE} (100) and nothing else is called.
 */
final class CudaIpcProbe
{
    /** CUDA 12.0: VMM export to POSIX fds, the _v2 symbols and the primary-context calls bound here. */
    static final int MINIMUM_DRIVER_VERSION = 12000;
    static final Set<Capability> CAPABILITIES = Set.of(Capability.DEVICE_MEMORY, Capability.HOST_MEMORY, Capability.CROSS_PROCESS,
            Capability.TRANSPORT_ALLOCATION, Capability.COALESCING, Capability.PEER_FAILURE_DETECTION);

    /**
     * @param availability what the probe found.
     * @param devices devices the driver sees.
     * @param vmmFd whether device 0 exports VMM memory as POSIX fds.
     */
    record Result(Availability availability, int devices, boolean vmmFd)
    {
    }

    private CudaIpcProbe()
    {
    }

    static Result run(boolean allowFake)
    {
        Map<String, String> details = new LinkedHashMap<>();
        Optional<String> off = NativeLibrary.disabled(CudaIpcBackendFactory.NAME);
        if (off.isPresent()) {
            return unavailable(off.get(), details);
        }
        if (!CudaIpcProbe.class.getModule().isNativeAccessEnabled()) {
            return unavailable("native access is not enabled for " + CudaIpcProbe.class.getModule()
                    + "; start the JVM with --enable-native-access=" + NativeLibrary.nativeAccessFlag(CudaIpcProbe.class), details);
        }
        details.put("library", NativeLibrary.resolve(CudaIpcBackendFactory.NAME, CudaDriver.SONAME).toString());
        Optional<String> load = CudaDriver.loadFailure();
        if (load.isPresent()) {
            return unavailable("the CUDA driver cannot be loaded: " + load.get() + " (the cuda-ipc transport needs the NVIDIA driver's "
                    + CudaDriver.SONAME + ", not the CUDA toolkit)", details);
        }
        if (CudaDriver.isFake()) {
            details.put("fake", "true");
            if (!allowFake) {
                return unavailable(details.get("library") + " is kvbridge's test fake of the CUDA driver, not a driver; set -D"
                        + CudaIpcBackendFactory.ALLOW_FAKE_PROPERTY + "=true only to test against it, or point -D" + CudaIpcBackendFactory.LIBRARY_PROPERTY
                        + " at the real " + CudaDriver.SONAME, details);
            }
        }
        int[] value = new int[1];
        int rc = CudaDriver.cuDriverGetVersion(value);
        details.put("driverVersion", rc == 0 ? value[0] / 1000 + "." + value[0] % 1000 / 10 : "unknown (rc=" + rc + ")");
        if (rc == 0 && value[0] < MINIMUM_DRIVER_VERSION) {
            return unavailable("the NVIDIA driver supports CUDA " + details.get("driverVersion") + " (cuDriverGetVersion=" + value[0] + "), older than the "
                    + "CUDA 12.0 (" + MINIMUM_DRIVER_VERSION + ") the transport needs; install a newer NVIDIA driver", details);
        }
        int driverVersion = rc == 0 ? value[0] : 0;
        rc = CudaDriver.cuInit(0);
        if (rc == CUDA_ERROR_NO_DEVICE) {
            return unavailable("no CUDA device: cuInit returned 100 (CUDA_ERROR_NO_DEVICE); run on a machine with an NVIDIA GPU, and check that "
                    + "CUDA_VISIBLE_DEVICES does not hide every device and that the container is given the GPUs (--gpus)", details);
        }
        if (rc != 0) {
            return unavailable("cuInit returned " + rc + " (" + CudaDriver.errorName(rc) + "); check the driver installation (nvidia-smi)", details);
        }
        rc = CudaDriver.cuDeviceGetCount(value);
        int devices = rc == 0 ? value[0] : 0;
        details.put("devices", Integer.toString(devices));
        if (devices <= 0) {
            return unavailable("the CUDA driver sees no device (cuDeviceGetCount rc=" + rc + ", count=" + devices + "); check CUDA_VISIBLE_DEVICES", details);
        }
        details.put("device0", CudaDriver.cuDeviceGetName(0));
        // which entry point a transfer of several copies uses (the option batch=off turns it off per instance)
        details.put("batchCopy", CudaMemcpyBatch.find(driverVersion).detail());
        boolean unified = attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) == 1;
        boolean legacy = attribute(CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED) == 1;
        boolean vmmFd = attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 1
                && attribute(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) == 1;
        details.put("legacyIpc", Boolean.toString(legacy));
        details.put("vmmPosixFd", Boolean.toString(vmmFd));
        List<String> reasons = new ArrayList<>();
        if (!unified) {
            reasons.add("device 0 has no unified addressing (CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING=0); the transport infers copy directions from "
                    + "addresses and needs a 64-bit Linux system with a UVA-capable GPU");
        }
        if (!legacy && !vmmFd) {
            reasons.add("device 0 supports neither legacy IPC (CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED=0) nor VMM export to POSIX fds "
                    + "(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED=0), so its memory cannot be shared between processes; "
                    + "IPC is unavailable on some virtualised GPUs and under MPS/MIG configurations without it, use a GPU with IPC support");
        }
        if (!reasons.isEmpty()) {
            return new Result(Availability.unavailable(reasons, details), devices, vmmFd);
        }
        return new Result(Availability.available(CAPABILITIES, details), devices, vmmFd);
    }

    private static int attribute(int attribute)
    {
        int[] value = new int[1];
        return CudaDriver.cuDeviceGetAttribute(value, attribute, 0) == 0 ? value[0] : -1;
    }

    private static Result unavailable(String reason, Map<String, String> details)
    {
        return new Result(Availability.unavailable(List.of(reason), details), 0, false);
    }
}
