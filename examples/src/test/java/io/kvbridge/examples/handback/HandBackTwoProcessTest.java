package io.kvbridge.examples.handback;

import static io.kvbridge.examples.handback.HandBackEngine.BLOCK_BYTES;
import static io.kvbridge.examples.handback.HandBackEngine.BLOCK_TOKENS;
import static io.kvbridge.examples.handback.HandBackEngine.LAYERS;
import static io.kvbridge.examples.handback.HandBackEngine.ids;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.HandBacks;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.examples.demo.Ucx;
import io.kvbridge.json.TransferParamsJson;
import io.kvbridge.testkit.ChildJvm;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The two-way hand-off between two processes: this JVM is the prefill engine P, a child JVM
 * ({@link HandBackDecoderProcess}) the decode engine D, both kv_both over one cache each, the
 * parameters passed as JSON as a router would. Turn 1 moves P's 40-token prompt (three blocks, the
 * last partial) to D; D decodes 30 tokens and hands the conversation's five blocks back; P, which
 * kept the prompt's two whole blocks, receives only the three it lacks.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
final class HandBackTwoProcessTest
{
    private static final Duration STEP = Duration.ofSeconds(90);
    private static final int PROMPT_TOKENS = 40;
    private static final int CONVERSATION_TOKENS = 70;
    private static final int[] PROMPT = {0, 1, 2};
    // the partial kept block 2 is received into again: the decoder completed it
    private static final int[] LACKING = {2, 20, 21};

    @TempDir
    Path work;

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource({"tcp, PUSH", "tcp, PULL", "ucx, PUSH", "ucx, PULL"})
    void theDecoderInAnotherProcessHandsTheConversationBack(String transport, TransferMode mode) throws Exception
    {
        if (transport.equals("ucx")) {
            Ucx.assumeAvailable();
        }
        Path secretFile = work.resolve("secret");
        byte[] secret = new SecureRandom().generateSeed(32);
        Files.write(secretFile, secret);
        Files.setPosixFilePermissions(secretFile, PosixFilePermissions.fromString("rw-------"));
        try (ChildJvm decoder = ChildJvm.start("decoder", HandBackDecoderProcess.class, transport, secretFile.toString());
                HandBackEngine prefill = new HandBackEngine("prefill", transport, secret)) {
            decoder.expect("READY", STEP);
            prefill.fill(HandBackDecoderProcess.TURN_1, 0, PROMPT);
            TransferParams turn1 = prefill.producer.prefillFinished("turn-1", ids(PROMPT));
            decoder.send("TURN1 " + mode + " " + encode(turn1));
            String[] handBack = decoder.expect("HANDBACK", STEP).split(" ");
            assertEquals("0", handBack[1], "bytes of turn 1 the decoder found wrong");
            assertEquals(List.of(new FreedRequest("turn-1", FreeReason.COMPLETED)), prefill.awaitFreed(), "turn 1 freed once");
            HandBacks handBacks = new HandBacks(BLOCK_TOKENS);
            handBacks.keep("chat-7", PROMPT_TOKENS, ids(PROMPT));

            TransferParams back = TransferParamsJson.read(new String(Base64.getDecoder().decode(handBack[2]), StandardCharsets.UTF_8));
            long movedBefore = prefill.movedBytes();
            assertArrayEquals(new int[] {LACKING.length}, handBacks.lacking("p-turn-2", "chat-7", back, CONVERSATION_TOKENS));
            handBacks.receive(prefill.consumer, "p-turn-2", "chat-7", back, CONVERSATION_TOKENS, mode, ids(LACKING));
            assertNull(prefill.awaitReceived("p-turn-2"));
            assertEquals(0, prefill.wrong(HandBackDecoderProcess.TURN_1_DECODE, 2, LACKING), "the lacking blocks hold the decoder's rows");
            assertEquals(0, prefill.wrong(HandBackDecoderProcess.TURN_1, 0, 0, 1), "the kept blocks are untouched");
            assertEquals(0, prefill.written(3, 10, 11, 12, 13, 14, 22), "nothing else was written");

            decoder.send("FINISH");
            String[] done = decoder.expect("DONE", STEP).split(" ");
            assertEquals("[FreedRequest[requestId=" + HandBackDecoderProcess.HAND_BACK_ID + ",_reason=COMPLETED]]", done[1],
                    "the decoder's producer reports the hand-back freed once");
            assertEquals("true", done[2], "the decoder's audits are idle");
            assertTrue(prefill.awaitIdle(), "the prefill's audits are idle");
            // pull: the prefill posted the hand-back's reads and the decoder turn 1's; push: the other way round
            long turnBytes = LAYERS.length * BLOCK_BYTES;
            long handBackBytes = mode == TransferMode.PULL ? prefill.movedBytes() - movedBefore : Long.parseLong(done[3]);
            long turn1Bytes = mode == TransferMode.PULL ? Long.parseLong(done[3]) : prefill.movedBytes();
            assertEquals(PROMPT.length * turnBytes, turn1Bytes, "turn 1 moved the prompt's blocks");
            assertEquals(LACKING.length * turnBytes, handBackBytes, "the hand-back moved the lacking blocks only");
            decoder.send("EXIT");
            decoder.expect("CLOSED", STEP);
            assertEquals(0, decoder.awaitExit(STEP));
        }
    }

    private static String encode(TransferParams params)
    {
        return Base64.getEncoder().encodeToString(TransferParamsJson.write(params).getBytes(StandardCharsets.UTF_8));
    }
}
