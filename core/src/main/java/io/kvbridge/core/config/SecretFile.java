package io.kvbridge.core.config;

import io.kvbridge.core.wire.MessageAuthenticator;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * Reads the side channel secret from a file. The file must exist, be a regular file of at most
 * {@value #MAX_BYTES} bytes and hold at least {@value #MIN_BYTES} bytes
 * once one trailing line break is removed (so {@code openssl rand -hex 32 > secret} works). A file
 * others may read or write is refused, not warned about: a secret every user of the host can read
 * authenticates nothing, and one anybody can write can be replaced; the fix is {@code chmod 600}
 * (in Kubernetes, a secret volume with {@code defaultMode: 0400}). Group permissions are the
 * operator's choice and accepted. Where the file system has no POSIX permissions they are not checked.
 * Public so that commands taking a secret file on their command line check it as the configuration does.
 */
public final class SecretFile
{
    /** The fewest bytes a secret holds: what the side channel's message authentication needs. */
    public static final int MIN_BYTES = MessageAuthenticator.MIN_SECRET_BYTES;

    /** The largest secret file read; a secret is tens of bytes. */
    static final int MAX_BYTES = 4096;

    private SecretFile()
    {
    }

    /**
     * Reads the secret.
     *
     * @param where the key or variable that named the file, for the messages.
     * @param file the file.
     * @param problems where problems are added.
     * @return the secret, or null with a problem added.
     */
    public static byte[] read(String where, Path file, List<String> problems)
    {
        String named = where + "=" + file;
        if (!Files.exists(file)) {
            problems.add(named + " does not exist (write at least " + MessageAuthenticator.MIN_SECRET_BYTES + " random bytes into it,"
                    + " for example: openssl rand -hex 32 > " + file + "; chmod 600 " + file + ")");
            return null;
        }
        try {
            byte[] bytes = readPrivate(named, file, MAX_BYTES, problems);
            if (bytes == null) {
                return null;
            }
            if (bytes.length > MAX_BYTES) {
                problems.add(named + " is longer than " + MAX_BYTES + " bytes; a secret is a few dozen random bytes");
                return null;
            }
            int length = bytes.length;
            if (length > 0 && bytes[length - 1] == '\n') {
                length--;
                if (length > 0 && bytes[length - 1] == '\r') {
                    length--;
                }
            }
            if (length < MessageAuthenticator.MIN_SECRET_BYTES) {
                problems.add(named + " holds " + length + " bytes, fewer than the " + MessageAuthenticator.MIN_SECRET_BYTES
                        + " a secret needs (for example: openssl rand -hex 32 > " + file + ")");
                return null;
            }
            return Arrays.copyOf(bytes, length);
        }
        catch (IOException | SecurityException e) {
            problems.add(named + " cannot be read: " + e.getMessage());
            return null;
        }
    }

    /**
     * Reads a file that holds key material: it must be a regular file that every user of the host
     * may not read or write, and it is read to at most one byte past the bound.
     *
     * @param named the key or variable and the file, for the messages.
     * @param file the file, which exists.
     * @param maxBytes the bound; a longer file is returned as {@code maxBytes + 1} bytes for the caller to refuse.
     * @param problems where a problem is added.
     * @return the bytes, or null with a problem added.
     */
    static byte[] readPrivate(String named, Path file, int maxBytes, List<String> problems)
            throws IOException
    {
        if (!Files.isRegularFile(file)) {
            problems.add(named + " is not a regular file");
            return null;
        }
        if (Files.getFileStore(file).supportsFileAttributeView("posix")) {
            Set<PosixFilePermission> permissions = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS).permissions();
            if (Files.isSymbolicLink(file)) {
                permissions = Files.readAttributes(file, PosixFileAttributes.class).permissions();
            }
            if (permissions.contains(PosixFilePermission.OTHERS_READ) || permissions.contains(PosixFilePermission.OTHERS_WRITE)) {
                problems.add(named + " may be read or written by every user of the host; run chmod 600 " + file
                        + " (in Kubernetes: defaultMode: 0400)");
                return null;
            }
        }
        return readBounded(file, maxBytes);
    }

    /** Reads at most one byte past the bound, instead of trusting the size the file system reports. */
    static byte[] readBounded(Path file, int maxBytes)
            throws IOException
    {
        try (InputStream in = Files.newInputStream(file)) {
            return in.readNBytes(maxBytes + 1);
        }
    }
}
