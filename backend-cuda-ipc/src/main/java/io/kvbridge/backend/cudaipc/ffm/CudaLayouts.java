package io.kvbridge.backend.cudaipc.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The driver structs and enum values the binding writes, as FFM layouts and constants, checked
 * against {@code cuda.h} by {@code CudaLayoutsTest} (which compiles a C program against the
 * installed headers and compares every offset and value in {@link #facts()}).
 *
 * <pre>
 * CUmemAllocationProp (32 bytes)            CUmemAccessDesc (12 bytes)   CUipcMemHandle (64 bytes)
 *  0 type                 int               0 location.type int          0 reserved[64]
 *  4 requestedHandleTypes int               4 location.id   int
 *  8 location.type        int               8 flags         int
 * 12 location.id          int
 * 16 win32HandleMetaData  void*
 * 24 allocFlags {u8 compressionType, u8 gpuDirectRDMACapable, u16 usage, u8 reserved[4]}
 *
 * CUmemcpyAttributes (24 bytes)
 *  0 srcAccessOrder int
 *  4 srcLocHint {type int, id int}
 * 12 dstLocHint {type int, id int}
 * 20 flags          unsigned int
 * </pre>
 */
public final class CudaLayouts
{
    public static final StructLayout MEM_LOCATION = MemoryLayout.structLayout(JAVA_INT.withName("type"), JAVA_INT.withName("id"));
    public static final StructLayout ALLOCATION_PROP = MemoryLayout.structLayout(
            JAVA_INT.withName("type"),
            JAVA_INT.withName("requestedHandleTypes"),
            MEM_LOCATION.withName("location"),
            ADDRESS.withName("win32HandleMetaData"),
            MemoryLayout.structLayout(JAVA_BYTE.withName("compressionType"), JAVA_BYTE.withName("gpuDirectRDMACapable"), JAVA_SHORT.withName("usage"),
                    MemoryLayout.sequenceLayout(4, JAVA_BYTE).withName("reserved")).withName("allocFlags"));
    public static final StructLayout ACCESS_DESC = MemoryLayout.structLayout(MEM_LOCATION.withName("location"), JAVA_INT.withName("flags"));
    public static final StructLayout MEMCPY_ATTRIBUTES = MemoryLayout.structLayout(JAVA_INT.withName("srcAccessOrder"),
            MEM_LOCATION.withName("srcLocHint"), MEM_LOCATION.withName("dstLocHint"), JAVA_INT.withName("flags"));
    public static final StructLayout IPC_MEM_HANDLE = MemoryLayout.structLayout(MemoryLayout.sequenceLayout(64, JAVA_BYTE).withName("reserved"));

    public static final int CUDA_SUCCESS = 0;
    public static final int CUDA_ERROR_INVALID_VALUE = 1;
    public static final int CUDA_ERROR_NOT_INITIALIZED = 3;
    public static final int CUDA_ERROR_NO_DEVICE = 100;
    public static final int CUDA_ERROR_INVALID_CONTEXT = 201;
    public static final int CUDA_ERROR_NOT_FOUND = 500;
    public static final int CUDA_ERROR_NOT_READY = 600;
    public static final int CUDA_ERROR_ILLEGAL_ADDRESS = 700;
    public static final int CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712;

    public static final int CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41;
    public static final int CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;
    public static final int CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103;
    public static final int CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED = 125;

    public static final int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
    public static final int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
    public static final int CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11;
    public static final int CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12;
    public static final int CU_MEMORYTYPE_HOST = 1;
    public static final int CU_MEMORYTYPE_DEVICE = 2;

    public static final int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
    public static final int CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1;
    public static final int CU_MEM_LOCATION_TYPE_DEVICE = 1;
    public static final int CU_MEM_LOCATION_TYPE_HOST = 2;
    public static final int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
    public static final int CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1;
    public static final int CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;
    public static final int CU_MEMHOSTREGISTER_PORTABLE = 1;
    public static final int CU_STREAM_NON_BLOCKING = 1;
    public static final int CU_EVENT_DISABLE_TIMING = 2;
    public static final int CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 1;
    public static final int CU_MEMCPY_FLAG_DEFAULT = 0;
    public static final int CU_GET_PROC_ADDRESS_DEFAULT = 0;
    public static final int CU_GET_PROC_ADDRESS_SUCCESS = 0;
    public static final int CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1;
    public static final int CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2;

    private CudaLayouts()
    {
    }

    /**
     * Every size, offset and value the binding relies on, under the names the header check prints.
     *
     * @return name to value, in a fixed order.
     */
    public static Map<String, Long> facts()
    {
        Map<String, Long> facts = new LinkedHashMap<>();
        facts.put("sizeof(CUipcMemHandle)", IPC_MEM_HANDLE.byteSize());
        facts.put("sizeof(CUmemLocation)", MEM_LOCATION.byteSize());
        facts.put("offsetof(CUmemLocation,id)", offset(MEM_LOCATION, "id"));
        facts.put("sizeof(CUmemAllocationProp)", ALLOCATION_PROP.byteSize());
        facts.put("offsetof(CUmemAllocationProp,requestedHandleTypes)", offset(ALLOCATION_PROP, "requestedHandleTypes"));
        facts.put("offsetof(CUmemAllocationProp,location)", offset(ALLOCATION_PROP, "location"));
        facts.put("offsetof(CUmemAllocationProp,win32HandleMetaData)", offset(ALLOCATION_PROP, "win32HandleMetaData"));
        facts.put("offsetof(CUmemAllocationProp,allocFlags)", offset(ALLOCATION_PROP, "allocFlags"));
        facts.put("sizeof(CUmemAccessDesc)", ACCESS_DESC.byteSize());
        facts.put("offsetof(CUmemAccessDesc,flags)", offset(ACCESS_DESC, "flags"));
        facts.put("sizeof(CUmemcpyAttributes)", MEMCPY_ATTRIBUTES.byteSize());
        facts.put("offsetof(CUmemcpyAttributes,srcAccessOrder)", offset(MEMCPY_ATTRIBUTES, "srcAccessOrder"));
        facts.put("offsetof(CUmemcpyAttributes,srcLocHint)", offset(MEMCPY_ATTRIBUTES, "srcLocHint"));
        facts.put("offsetof(CUmemcpyAttributes,dstLocHint)", offset(MEMCPY_ATTRIBUTES, "dstLocHint"));
        facts.put("offsetof(CUmemcpyAttributes,flags)", offset(MEMCPY_ATTRIBUTES, "flags"));
        facts.put("sizeof(CUdeviceptr)", 8L);
        facts.put("sizeof(size_t)", 8L);
        facts.put("sizeof(CUdriverProcAddressQueryResult)", 4L);
        facts.put("sizeof(cuuint64_t)", 8L);
        facts.put("sizeof(CUmemGenericAllocationHandle)", 8L);
        facts.put("sizeof(CUresult)", 4L);
        facts.put("CUDA_ERROR_NO_DEVICE", (long) CUDA_ERROR_NO_DEVICE);
        facts.put("CUDA_ERROR_NOT_FOUND", (long) CUDA_ERROR_NOT_FOUND);
        facts.put("CUDA_ERROR_NOT_READY", (long) CUDA_ERROR_NOT_READY);
        facts.put("CUDA_ERROR_ILLEGAL_ADDRESS", (long) CUDA_ERROR_ILLEGAL_ADDRESS);
        facts.put("CUDA_ERROR_INVALID_CONTEXT", (long) CUDA_ERROR_INVALID_CONTEXT);
        facts.put("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", (long) CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
        facts.put("CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING", (long) CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
        facts.put("CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", (long) CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
        facts.put("CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", (long) CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
        facts.put("CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED", (long) CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED);
        facts.put("CU_POINTER_ATTRIBUTE_MEMORY_TYPE", (long) CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
        facts.put("CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL", (long) CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
        facts.put("CU_POINTER_ATTRIBUTE_RANGE_START_ADDR", (long) CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
        facts.put("CU_POINTER_ATTRIBUTE_RANGE_SIZE", (long) CU_POINTER_ATTRIBUTE_RANGE_SIZE);
        facts.put("CU_MEMORYTYPE_HOST", (long) CU_MEMORYTYPE_HOST);
        facts.put("CU_MEMORYTYPE_DEVICE", (long) CU_MEMORYTYPE_DEVICE);
        facts.put("CU_MEM_ALLOCATION_TYPE_PINNED", (long) CU_MEM_ALLOCATION_TYPE_PINNED);
        facts.put("CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", (long) CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        facts.put("CU_MEM_LOCATION_TYPE_DEVICE", (long) CU_MEM_LOCATION_TYPE_DEVICE);
        facts.put("CU_MEM_LOCATION_TYPE_HOST", (long) CU_MEM_LOCATION_TYPE_HOST);
        facts.put("CU_MEM_ACCESS_FLAGS_PROT_READWRITE", (long) CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        facts.put("CU_MEM_ALLOC_GRANULARITY_RECOMMENDED", (long) CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
        facts.put("CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS", (long) CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        facts.put("CU_MEMHOSTREGISTER_PORTABLE", (long) CU_MEMHOSTREGISTER_PORTABLE);
        facts.put("CU_STREAM_NON_BLOCKING", (long) CU_STREAM_NON_BLOCKING);
        facts.put("CU_EVENT_DISABLE_TIMING", (long) CU_EVENT_DISABLE_TIMING);
        facts.put("CU_MEMCPY_SRC_ACCESS_ORDER_STREAM", (long) CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
        facts.put("CU_MEMCPY_FLAG_DEFAULT", (long) CU_MEMCPY_FLAG_DEFAULT);
        facts.put("CU_GET_PROC_ADDRESS_DEFAULT", (long) CU_GET_PROC_ADDRESS_DEFAULT);
        facts.put("CU_GET_PROC_ADDRESS_SUCCESS", (long) CU_GET_PROC_ADDRESS_SUCCESS);
        facts.put("CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND", (long) CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        facts.put("CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT", (long) CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
        return facts;
    }

    private static long offset(StructLayout layout, String field)
    {
        return layout.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }
}
