package io.kvbridge.backend.cudaipc;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * What one {@code cuda-ipc} instance tells peers ({@code localMetadata()}): its agent name, the
 * process it lives in, the abstract Unix socket its control channel listens on, and every
 * registered region with how a peer reaches it. Decoding treats the bytes as hostile: every length
 * is bounded before anything is allocated, and every region is checked for overflow, for lying
 * inside its allocation and for overlapping no other region.
 *
 * <pre>
 * magic "KVCI" u32 | version u16 | agent (u16 length, UTF-8) | pid i32 | process token i64
 * | socket name (u16 length) | region count i32 | regions:
 *   id i32 | export u8 | device i32 | address i64 | bytes i64 | allocation base i64
 *   | allocation bytes i64 | [64-byte IPC handle, export LEGACY_IPC only]
 * </pre>
 *
 * @param agentName the instance's agent name.
 * @param pid its process id.
 * @param processToken random per JVM: equal tokens mean one process, whatever the pid namespace.
 * @param socketName the abstract socket name of its control channel.
 * @param regions registered memory, sorted by address.
 */
record CudaIpcMetadata(String agentName, int pid, long processToken, String socketName, List<Region> regions)
{
    static final int MAGIC = 0x4B564349;
    static final short VERSION = 1;
    static final int MAX_NAME_BYTES = 255;
    static final int MAX_REGIONS = 1 << 16;
    static final int HANDLE_BYTES = 64;

    /** How a region's memory reaches another process. */
    enum Export
    {
        /** Host memory of the owner's process: only a peer in the same process can use it. */
        HOST_PRIVATE,
        /** Host memory in a memfd the transport allocated: its descriptor is passed over the control socket. */
        HOST_SHARED,
        /** cuMemAlloc memory: a 64-byte legacy IPC handle, opened with cuIpcOpenMemHandle. */
        LEGACY_IPC,
        /** cuMemCreate memory: a POSIX file descriptor passed over the control socket, imported and mapped. */
        VMM_FD,
        /** Device memory that cannot be exported (VMM memory created without a POSIX fd handle type). */
        DEVICE_PRIVATE;

        boolean device()
        {
            return this == LEGACY_IPC || this == VMM_FD || this == DEVICE_PRIVATE;
        }

        boolean passesDescriptor()
        {
            return this == HOST_SHARED || this == VMM_FD;
        }
    }

    /**
     * One advertised region.
     *
     * @param id the owner's region id, which names it in descriptor requests.
     * @param export how it is reached.
     * @param device device ordinal (0 for host memory).
     * @param address first byte, in the owner's address space.
     * @param bytes length.
     * @param allocationBase first byte of the whole allocation holding it (what is opened or mapped).
     * @param allocationBytes length of that allocation.
     * @param handle the legacy IPC handle, 64 bytes; empty otherwise.
     */
    record Region(int id, Export export, int device, long address, long bytes, long allocationBase, long allocationBytes, byte[] handle)
    {
        Region
        {
            requireNonNull(export, "export is null");
            requireNonNull(handle, "handle is null");
        }

        long end()
        {
            return address + bytes;
        }

        boolean contains(long start, long length)
        {
            return start >= address && length >= 0 && length <= end() - start;
        }
    }

    CudaIpcMetadata
    {
        requireNonNull(agentName, "agentName is null");
        requireNonNull(socketName, "socketName is null");
        regions = List.copyOf(regions);
    }

    byte[] encode()
    {
        byte[] agent = agentName.getBytes(StandardCharsets.UTF_8);
        byte[] socket = socketName.getBytes(StandardCharsets.UTF_8);
        int size = 4 + 2 + 2 + agent.length + 4 + 8 + 2 + socket.length + 4;
        for (Region region : regions) {
            size += 4 + 1 + 4 + 8 * 4 + (region.export() == Export.LEGACY_IPC ? HANDLE_BYTES : 0);
        }
        ByteBuffer out = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(MAGIC).putShort(VERSION).putShort((short) agent.length).put(agent).putInt(pid).putLong(processToken);
        out.putShort((short) socket.length).put(socket).putInt(regions.size());
        for (Region region : regions) {
            out.putInt(region.id()).put((byte) region.export().ordinal()).putInt(region.device()).putLong(region.address()).putLong(region.bytes())
                    .putLong(region.allocationBase()).putLong(region.allocationBytes());
            if (region.export() == Export.LEGACY_IPC) {
                out.put(region.handle());
            }
        }
        return out.array();
    }

    /**
     * Decodes and checks a peer's metadata.
     *
     * @param bytes untrusted.
     * @return the metadata.
     * @throws KvBridgeException {@code PROTOCOL_ERROR} naming the first problem.
     */
    static CudaIpcMetadata decode(byte[] bytes)
    {
        requireNonNull(bytes, "peerMetadata is null");
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        try {
            int magic = in.getInt();
            if (magic != MAGIC) {
                throw malformed("magic=0x%08x is not cuda-ipc metadata (expected 0x%08x); both sides must use the cuda-ipc transport", magic, MAGIC);
            }
            short version = in.getShort();
            if (version != VERSION) {
                throw malformed("metadata version=%d is not supported (expected %d); run the same kvbridge version on both sides", version, VERSION);
            }
            String agent = string(in, MAX_NAME_BYTES, "agent name");
            int pid = in.getInt();
            long token = in.getLong();
            String socket = string(in, 100, "socket name");
            if (pid <= 0 || agent.isEmpty() || socket.isEmpty()) {
                throw malformed("pid=%d, agent name '%s' or socket name '%s' is empty or invalid", pid, agent, socket);
            }
            int count = in.getInt();
            if (count < 0 || count > MAX_REGIONS || count > in.remaining() / 41) {
                throw malformed("region count=%d exceeds %d or the %d bytes left", count, MAX_REGIONS, in.remaining());
            }
            List<Region> regions = new ArrayList<>(count);
            Export[] exports = Export.values();
            for (int i = 0; i < count; i++) {
                int id = in.getInt();
                int kind = in.get();
                if (kind < 0 || kind >= exports.length) {
                    throw malformed("region %d: export kind=%d is unknown", i, kind);
                }
                Export export = exports[kind];
                int device = in.getInt();
                long address = in.getLong();
                long length = in.getLong();
                long base = in.getLong();
                long allocationBytes = in.getLong();
                byte[] handle = new byte[export == Export.LEGACY_IPC ? HANDLE_BYTES : 0];
                in.get(handle);
                if (device < 0 || (!export.device() && device != 0) || address <= 0 || length <= 0 || address > Long.MAX_VALUE - length || base <= 0
                        || allocationBytes <= 0 || base > Long.MAX_VALUE - allocationBytes || address < base || address + length > base + allocationBytes) {
                    throw malformed("region %d: id=%d device=%d address=0x%x bytes=%d allocation=0x%x+%d is not a range inside its allocation",
                            i, id, device, address, length, base, allocationBytes);
                }
                regions.add(new Region(id, export, device, address, length, base, allocationBytes, handle));
            }
            if (in.hasRemaining()) {
                throw malformed("%d bytes follow the last region", in.remaining());
            }
            regions.sort((a, b) -> Long.compare(a.address(), b.address()));
            for (int i = 1; i < regions.size(); i++) {
                Region previous = regions.get(i - 1);
                Region next = regions.get(i);
                if (next.address() < previous.end() && next.export().device() == previous.export().device() && next.device() == previous.device()) {
                    throw malformed("regions %d (0x%x+%d) and %d (0x%x+%d) overlap", previous.id(), previous.address(), previous.bytes(), next.id(),
                            next.address(), next.bytes());
                }
            }
            return new CudaIpcMetadata(agent, pid, token, socket, regions);
        }
        catch (BufferUnderflowException e) {
            throw malformed("metadata of %d bytes ends early", bytes.length);
        }
    }

    private static String string(ByteBuffer in, int max, String what)
    {
        int length = Short.toUnsignedInt(in.getShort());
        if (length > max || length > in.remaining()) {
            throw malformed("%s of %d bytes exceeds %d or the %d bytes left", what, length, max, in.remaining());
        }
        byte[] raw = new byte[length];
        in.get(raw);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(raw)).toString();
        }
        catch (CharacterCodingException e) {
            throw malformed("%s is not UTF-8", what);
        }
    }

    private static KvBridgeException malformed(String format, Object... args)
    {
        return new KvBridgeException(ErrorCode.PROTOCOL_ERROR, "cuda-ipc peer metadata: " + String.format(Locale.ROOT, format, args));
    }

    @Override
    public String toString()
    {
        return "CudaIpcMetadata[" + agentName + ", pid=" + pid + ", regions=" + regions.size() + "]";
    }

    @Override
    public boolean equals(Object other)
    {
        return other instanceof CudaIpcMetadata that && Arrays.equals(encode(), that.encode());
    }

    @Override
    public int hashCode()
    {
        return Arrays.hashCode(encode());
    }
}
