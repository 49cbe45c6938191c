package io.kvbridge.backend.tcp;

import io.kvbridge.spi.transfer.TransferBackend;

/**
 * The frames of the {@code tcp} stream, all little-endian, each starting with its type and the
 * protocol version. Headers have a fixed length per type (a grant key is padded to
 * {@link TransferBackend#MAX_GRANT_KEY_BYTES}), so a reader knows how much to read from the type
 * byte alone; a payload follows where the header says.
 *
 * <pre>
 * initiator to target
 *   WRITE  128: type, version, key length, -, run index i32, run count i32, -, handle i64, address i64, length i64, -, key[64]; then length bytes
 *   READ   128: type, version, key length, -, first run i32, runs here i32, run count i32, handle i64, -, key[64]; then runs x (address i64, length i64)
 *   CANCEL  16: type, version, -, handle i64 at 8: the rest of that transfer's frames will not come
 *   NOTIFY  16: type, version, -, length i32 at 4, -; then length bytes
 * target to initiator
 *   DATA    24: type, version, last, -, run i32, handle i64, length i64; then length bytes
 *               (last = 1 on a READ's last run: the READ succeeded, and no RESULT follows)
 *   RESULT  32: type, version, result, op, run i32, handle i64, address i64, length i64
 * </pre>
 *
 * <p>Before any frame, a handshake ({@link TcpHandshake}): the target sends a CHALLENGE as soon as
 * it accepts, the initiator answers with its HELLO, and the target answers a HELLO it verified
 * with an ACK; nothing else is read or sent before.
 *
 * <pre>
 *   CHALLENGE 32: magic i32, version, flags (1: a connection key is required), -, -, nonce[16] at 16
 *   HELLO     72: magic i32, version, name length, -, from instance i64, to instance i64,
 *                 nonce[16] at 24, mac[32] at 40; then the name (UTF-8)
 *   ACK       48: magic i32, version, result, -, instance i64, mac[32] at 16
 * </pre>
 *
 * <p>Answers come in the order requests were made on a connection: the target works through its
 * stream in order and queues each transfer's data and answer behind the ones before. A READ that
 * succeeds is answered by the flag on its last DATA frame, which saves a write and a TCP segment
 * per READ; a refused one by a RESULT and no DATA.
 */
final class TcpWire
{
    // 2: a READ's last DATA frame carries its success, instead of a RESULT of its own
    // 3: the target challenges first, and a hello proves the connection key before anything is served
    static final byte VERSION = 3;

    static final byte WRITE = 1;
    static final byte READ = 2;
    static final byte CANCEL = 3;
    static final byte NOTIFY = 4;
    static final byte DATA = 5;
    static final byte RESULT = 6;

    static final int MAX_KEY = TransferBackend.MAX_GRANT_KEY_BYTES;
    static final int KEY_AT = 64;
    static final int WRITE_BYTES = KEY_AT + TransferBackend.MAX_GRANT_KEY_BYTES;
    static final int READ_BYTES = WRITE_BYTES;
    static final int CANCEL_BYTES = 16;
    static final int NOTIFY_BYTES = 16;
    static final int DATA_BYTES = 24;
    static final int RESULT_BYTES = 32;
    static final int READ_RUN_BYTES = 16;
    /** Runs listed in one READ frame, so its list stays one buffer of 64 KiB. */
    static final int MAX_READ_RUNS = 4096;
    /** Runs one transfer may have: bounds what a peer's READ makes the target keep. */
    static final int MAX_RUNS = 1 << 20;
    static final int MAX_NOTIFICATION_BYTES = 64 * 1024;

    static final byte RESULT_OK = 0;
    static final byte RESULT_NO_GRANT = 1;
    static final byte RESULT_OUTSIDE = 2;
    static final byte RESULT_FAILED = 3;

    /** Byte 2 of a DATA frame on a READ's last run: the READ is answered, DONE. */
    static final byte DATA_LAST = 1;

    // the handshake: the target's challenge, the initiator's hello, the target's answer
    static final int MAGIC = 0x5442564b; // "KVBT"
    static final int NONCE_BYTES = 16;
    static final int MAC_BYTES = 32;
    static final int CHALLENGE_BYTES = 32;
    static final int CHALLENGE_NONCE_AT = 16;
    static final byte CHALLENGE_KEYED = 1;
    static final int HELLO_BYTES = 72;
    static final int HELLO_NONCE_AT = 24;
    static final int HELLO_MAC_AT = 40;
    static final int MAX_NAME_BYTES = 255;
    static final int ACK_BYTES = 48;
    static final int ACK_MAC_AT = 16;
    static final byte ACK_OK = 0;
    static final byte ACK_WRONG_INSTANCE = 1;

    private TcpWire()
    {
    }

    /** {@return the header length of a frame type, or 0 for a type nobody sends} */
    static int headerBytes(byte type)
    {
        return switch (type) {
            case WRITE, READ -> WRITE_BYTES;
            case CANCEL -> CANCEL_BYTES;
            case NOTIFY -> NOTIFY_BYTES;
            case DATA -> DATA_BYTES;
            case RESULT -> RESULT_BYTES;
            default -> 0;
        };
    }
}
