package io.kvbridge.testkit;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * The frames a test process and its {@link RemoteTargetProcess} exchange over the child's standard
 * input and output, and the values in them. A frame is a magic number, a length and a body; a
 * request's body is its id, its {@link Call} and the arguments, a reply's is the request's id, an
 * outcome and the result or the failure. Every count and length read is checked against a bound
 * before anything is allocated, so a corrupt stream fails with what was read instead of running out
 * of memory.
 */
final class RemoteWire
{
    /** Starts every frame: "KVBR". */
    static final int MAGIC = 0x4B564252;
    /** The largest body either side accepts. */
    static final int MAX_FRAME_BYTES = 64 << 20;
    /** The largest array or list inside a body. */
    static final int MAX_ITEMS = 1 << 24;

    /** The request id of frames nobody asked for (wake-ups). */
    static final int UNSOLICITED = 0;
    /** The call returned; its result follows. */
    static final byte OK = 0;
    /** The call threw a {@link KvBridgeException}: code and message follow. */
    static final byte KVBRIDGE_FAILURE = 1;
    /** The call threw something else: its class name and message follow. */
    static final byte OTHER_FAILURE = 2;
    /** Unsolicited: the target's instance woke the thread it was given by {@code wakeOnProgress}. */
    static final byte WOKEN = 3;

    private RemoteWire()
    {
    }

    /** What the test process asks of its target process. */
    enum Call
    {
        START, REGISTER, DEREGISTER, ALLOCATE, ALLOCATE_SHARED, LOCAL_METADATA, CONNECT, DISCONNECT, PREPARE_LOCAL, PREPARE_REMOTE,
        RELEASE_PREPARED, GRANT, REVOKE, NOTIFY, DRAIN_NOTIFICATIONS, WAKE_ON_PROGRESS, PROBLEM, CLOSE, EXIT;

        static Call read(DataInputStream in) throws IOException
        {
            int ordinal = in.readUnsignedByte();
            Call[] calls = values();
            if (ordinal >= calls.length) {
                throw new IOException("call " + ordinal + " is none of the " + calls.length + " calls this harness knows; both sides run the same classes");
            }
            return calls[ordinal];
        }
    }

    /** Writes a body. */
    @FunctionalInterface
    interface Body
    {
        /**
         * Writes the values.
         *
         * @param out the body.
         * @throws IOException never for the in-memory body.
         */
        void write(DataOutputStream out) throws IOException;
    }

    /**
     * Reads a result.
     *
     * @param <T> the result.
     */
    @FunctionalInterface
    interface Result<T>
    {
        /**
         * Reads the values.
         *
         * @param in the rest of the body.
         * @return the result.
         * @throws IOException when the body is malformed.
         */
        T read(DataInputStream in) throws IOException;
    }

    /** Writes nothing, or reads nothing. */
    static final Body NONE = out -> { };
    /** Reads an empty result. */
    static final Result<Void> NOTHING = in -> null;

    static byte[] body(Body body)
    {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            body.write(out);
        }
        catch (IOException e) {
            throw new IllegalStateException("writing to memory failed", e);
        }
        return bytes.toByteArray();
    }

    static void writeFrame(DataOutputStream out, byte[] body) throws IOException
    {
        out.writeInt(MAGIC);
        out.writeInt(body.length);
        out.write(body);
        out.flush();
    }

    /** Reads one frame's body, or returns null at the end of the stream between frames. */
    static byte[] readFrame(DataInputStream in) throws IOException
    {
        int first = in.read();
        if (first < 0) {
            return null;
        }
        int magic = (first << 24) | (in.readUnsignedByte() << 16) | (in.readUnsignedShort());
        if (magic != MAGIC) {
            throw new IOException(String.format("expected a frame (magic 0x%08x) but read 0x%08x: something else writes to the stream", MAGIC, magic));
        }
        int length = in.readInt();
        if (length < 0 || length > MAX_FRAME_BYTES) {
            throw new IOException("frame length " + length + " is outside [0, " + MAX_FRAME_BYTES + "]");
        }
        byte[] body = new byte[length];
        in.readFully(body);
        return body;
    }

    static DataInputStream reader(byte[] body)
    {
        return new DataInputStream(new java.io.ByteArrayInputStream(body));
    }

    /** Fails unless the body was read to its end: both sides must agree on every value. */
    static void checkConsumed(InputStream in, String what) throws IOException
    {
        int left = in.available();
        if (left != 0) {
            throw new IOException(what + " left " + left + " bytes unread: the two sides disagree on its layout");
        }
    }

    static int readCount(DataInputStream in, int max, String what) throws IOException
    {
        int count = in.readInt();
        if (count < 0 || count > max) {
            throw new IOException(what + " " + count + " is outside [0, " + max + "]");
        }
        return count;
    }

    static void writeBytes(DataOutputStream out, byte[] bytes) throws IOException
    {
        if (bytes == null) {
            out.writeInt(-1);
            return;
        }
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    static byte[] readBytes(DataInputStream in) throws IOException
    {
        int length = in.readInt();
        if (length == -1) {
            return null;
        }
        if (length < 0 || length > in.available()) {
            throw new IOException("byte array of length " + length + " in a body with " + in.available() + " bytes left");
        }
        byte[] bytes = new byte[length];
        in.readFully(bytes);
        return bytes;
    }

    static void writeString(DataOutputStream out, String text) throws IOException
    {
        writeBytes(out, text == null ? null : text.getBytes(StandardCharsets.UTF_8));
    }

    static String readString(DataInputStream in) throws IOException
    {
        byte[] bytes = readBytes(in);
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    static <E extends Enum<E>> E readEnum(DataInputStream in, Class<E> type) throws IOException
    {
        String name = readString(in);
        if (name == null) {
            return null;
        }
        try {
            return Enum.valueOf(type, name);
        }
        catch (IllegalArgumentException e) {
            throw new IOException(name + " is no " + type.getSimpleName(), e);
        }
    }

    static void writeEnum(DataOutputStream out, Enum<?> value) throws IOException
    {
        writeString(out, value == null ? null : value.name());
    }

    static void writeAllocation(DataOutputStream out, Allocation allocation) throws IOException
    {
        out.writeBoolean(allocation != null);
        if (allocation != null) {
            out.writeLong(allocation.address());
            out.writeLong(allocation.bytes());
            writeEnum(out, allocation.kind());
            out.writeInt(allocation.device());
        }
    }

    static Allocation readAllocation(DataInputStream in) throws IOException
    {
        if (!in.readBoolean()) {
            return null;
        }
        long address = in.readLong();
        long bytes = in.readLong();
        MemoryKind kind = readEnum(in, MemoryKind.class);
        int device = in.readInt();
        // the record checks the values: a bad one fails as it would in one process
        return new Allocation(address, bytes, kind, device);
    }

    static void writeDescriptors(DataOutputStream out, DescriptorList descriptors) throws IOException
    {
        out.writeBoolean(descriptors != null);
        if (descriptors != null) {
            writeEnum(out, descriptors.kind());
            out.writeInt(descriptors.device());
            out.writeInt(descriptors.size());
            for (int i = 0; i < descriptors.size(); i++) {
                out.writeLong(descriptors.address(i));
                out.writeLong(descriptors.length(i));
            }
        }
    }

    static DescriptorList readDescriptors(DataInputStream in) throws IOException
    {
        if (!in.readBoolean()) {
            return null;
        }
        MemoryKind kind = readEnum(in, MemoryKind.class);
        int device = in.readInt();
        int size = readCount(in, Math.min(MAX_ITEMS, in.available() / 16), "descriptor count");
        long[] addresses = new long[size];
        long[] lengths = new long[size];
        for (int i = 0; i < size; i++) {
            addresses[i] = in.readLong();
            lengths[i] = in.readLong();
        }
        // the list checks the values: a bad one fails as it would in one process
        return DescriptorList.wrap(kind, device, addresses, lengths, size);
    }

    static void writeInts(DataOutputStream out, int[] values) throws IOException
    {
        out.writeInt(values == null ? -1 : values.length);
        if (values != null) {
            for (int value : values) {
                out.writeInt(value);
            }
        }
    }

    static int[] readInts(DataInputStream in) throws IOException
    {
        int length = in.readInt();
        if (length == -1) {
            return null;
        }
        if (length < 0 || length > in.available() / 4) {
            throw new IOException("int array of length " + length + " in a body with " + in.available() + " bytes left");
        }
        int[] values = new int[length];
        for (int i = 0; i < length; i++) {
            values[i] = in.readInt();
        }
        return values;
    }

    /** Writes the outcome and description of a failure: a kvbridge error keeps its code and message. */
    static void writeFailure(DataOutputStream out, Throwable failure) throws IOException
    {
        if (failure instanceof KvBridgeException e) {
            out.writeByte(KVBRIDGE_FAILURE);
            writeEnum(out, e.code());
            String message = e.getMessage();
            String prefix = e.code().id() + ": ";
            writeString(out, message.startsWith(prefix) ? message.substring(prefix.length()) : message);
        }
        else {
            out.writeByte(OTHER_FAILURE);
            writeString(out, failure.getClass().getName());
            writeString(out, failure.getMessage());
        }
    }

    /**
     * Reads a failure written by {@link #writeFailure} and rebuilds it: a kvbridge error with the same
     * code and message, the JDK's argument and state errors as themselves, anything else as an
     * {@link IllegalStateException} naming its class.
     */
    static RuntimeException readFailure(byte outcome, DataInputStream in, String where) throws IOException
    {
        if (outcome == KVBRIDGE_FAILURE) {
            ErrorCode code = readEnum(in, ErrorCode.class);
            if (code == null) {
                throw new IOException("a kvbridge failure without a code");
            }
            return new KvBridgeException(code, readString(in));
        }
        if (outcome != OTHER_FAILURE) {
            throw new IOException("outcome " + outcome + " is none of OK, KVBRIDGE_FAILURE, OTHER_FAILURE");
        }
        String type = readString(in);
        String message = readString(in);
        return switch (String.valueOf(type)) {
            case "java.lang.NullPointerException" -> new NullPointerException(message);
            case "java.lang.IllegalArgumentException" -> new IllegalArgumentException(message);
            case "java.lang.IllegalStateException" -> new IllegalStateException(message);
            case "java.lang.UnsupportedOperationException" -> new UnsupportedOperationException(message);
            default -> new IllegalStateException(type + " " + where + ": " + message);
        };
    }

    /** Names an I/O failure for a message: a stream that ended inside a frame says so. */
    static String describe(IOException e)
    {
        return e instanceof EOFException ? "the stream ended inside a frame" : String.valueOf(e.getMessage());
    }
}
