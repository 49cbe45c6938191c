import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;

/**
 * Fetches one file for ./mvnw with nothing but the JDK (no curl or wget needed): downloads the URL,
 * checks its SHA-512, and only then moves it to its place, so a partial or altered download is
 * never used. Usage: {@code java Fetch.java URL SHA512 DESTINATION}.
 */
public final class Fetch
{
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(5);

    private Fetch()
    {
    }

    public static void main(String[] args)
            throws Exception
    {
        if (args.length != 3) {
            System.err.println("usage: java Fetch.java URL SHA512 DESTINATION");
            System.exit(2);
        }
        URI uri = URI.create(args[0]);
        String expected = args[1].toLowerCase(java.util.Locale.ROOT);
        Path destination = Path.of(args[2]);
        Files.createDirectories(destination.toAbsolutePath().getParent());
        Path partial = Files.createTempFile(destination.toAbsolutePath().getParent(), destination.getFileName().toString(), ".part");
        try {
            String actual = download(uri, partial);
            if (!actual.equals(expected)) {
                throw new IOException(uri + " has SHA-512 " + actual + ", expected " + expected + "; not used");
            }
            Files.move(partial, destination, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        catch (IOException e) {
            Files.deleteIfExists(partial);
            System.err.println("mvnw: " + e.getMessage());
            System.exit(1);
        }
    }

    private static String download(URI uri, Path target)
            throws IOException, InterruptedException, java.security.NoSuchAlgorithmException
    {
        HttpClient client = HttpClient.newBuilder().connectTimeout(CONNECT_TIMEOUT).followRedirects(HttpClient.Redirect.NORMAL).build();
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(REQUEST_TIMEOUT).GET().build();
        HttpResponse<InputStream> response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
        MessageDigest digest = MessageDigest.getInstance("SHA-512");
        try (InputStream body = new DigestInputStream(response.body(), digest); OutputStream out = Files.newOutputStream(target)) {
            if (response.statusCode() != 200) {
                throw new IOException(uri + " answered HTTP " + response.statusCode());
            }
            body.transferTo(out);
        }
        return HexFormat.of().formatHex(digest.digest());
    }
}
