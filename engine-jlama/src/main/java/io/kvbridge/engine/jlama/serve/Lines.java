package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.PrintStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The router's line protocol with the engine JVMs: one JSON object a line, prefixed with
 * {@link #PREFIX} so that anything else a JVM prints (a library's log line) is told apart and
 * ignored. Also the logits digest both sides compare.
 */
public final class Lines
{
    /** Starts every protocol line. */
    public static final String PREFIX = "@kvbridge-jlama ";

    static final ObjectMapper JSON = new ObjectMapper();

    private Lines()
    {
    }

    /**
     * Creates an empty message.
     *
     * @return a JSON object.
     */
    public static ObjectNode object()
    {
        return JSON.createObjectNode();
    }

    /**
     * Writes one message.
     *
     * @param out where.
     * @param message the message.
     */
    public static void send(PrintStream out, ObjectNode message)
    {
        synchronized (out) {
            out.println(PREFIX + message.toString());
            out.flush();
        }
    }

    /**
     * Parses a protocol line.
     *
     * @param line a line a peer printed.
     * @return the message, or null when the line is not a protocol line.
     */
    public static ObjectNode parse(String line)
    {
        if (!line.startsWith(PREFIX)) {
            return null;
        }
        try {
            return (ObjectNode) JSON.readTree(line.substring(PREFIX.length()));
        }
        catch (JsonProcessingException | ClassCastException e) {
            throw new IllegalStateException("malformed protocol line: " + line, e);
        }
    }

    /**
     * Returns the SHA-256 of logits' exact bits, so that two JVMs compare every bit without
     * shipping the vocabulary.
     *
     * @param logits the logits.
     * @return the digest in hex.
     */
    public static String digest(float[] logits)
    {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            byte[] bytes = new byte[logits.length * 4];
            for (int i = 0; i < logits.length; i++) {
                int bits = Float.floatToRawIntBits(logits[i]);
                bytes[4 * i] = (byte) bits;
                bytes[4 * i + 1] = (byte) (bits >>> 8);
                bytes[4 * i + 2] = (byte) (bits >>> 16);
                bytes[4 * i + 3] = (byte) (bits >>> 24);
            }
            return HexFormat.of().formatHex(sha.digest(bytes));
        }
        catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Reads a JSON array of integers.
     *
     * @param array the array.
     * @return its values.
     */
    static int[] ints(com.fasterxml.jackson.databind.JsonNode array)
    {
        int[] values = new int[array.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = array.get(i).asInt();
        }
        return values;
    }
}
