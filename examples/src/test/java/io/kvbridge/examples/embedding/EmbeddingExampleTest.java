package io.kvbridge.examples.embedding;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The example users copy keeps working. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
final class EmbeddingExampleTest
{
    @Test
    void theExampleMovesItsRequest() throws InterruptedException
    {
        assertTrue(EmbeddingExample.run());
    }
}
