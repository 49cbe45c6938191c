package io.kvbridge.spi.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

final class DirectoryEntryTest
{
    @Test
    void aRefusedIdIsNamedWithItsControlCharactersEscapedNotEchoed()
    {
        String hostile = "prefill\n[INFO] all good\u001b[2J\\";
        KvBridgeException refused = assertThrows(KvBridgeException.class, () -> DirectoryEntry.checkEngineId(hostile));

        assertEquals(ErrorCode.INVALID_ARGUMENT, refused.code());
        String message = refused.getMessage();
        assertFalse(message.contains("\n") || message.contains("\u001b"), message);
        assertTrue(message.contains("engineId=prefill\\u000a[INFO] all good\\u001b[2J\\u005c holds '/'"), message);
    }

    @Test
    void aPlainIdPassesUnchanged()
    {
        assertEquals("prefill-0.example", DirectoryEntry.checkEngineId("prefill-0.example"));
    }
}
