package io.kvbridge.examples.handback;

import static io.kvbridge.examples.handback.HandBackEngine.ids;

import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.json.TransferParamsJson;
import io.kvbridge.testkit.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;

/**
 * The decode engine D of {@link HandBackTwoProcessTest}, in a JVM of its own, kv_both over one cache.
 *
 * <pre>
 *   java -cp ... HandBackDecoderProcess TRANSPORT SECRET_FILE
 *   prints   READY
 *   TURN1 mode base64-json : receives turn 1 into blocks 10, 11, 12, checks it, decodes 30 tokens
 *                            (completes block 12, appends 13 and 14), hands blocks 10..14 back:
 *                            HANDBACK wrong-bytes-of-turn-1 base64-json
 *   FINISH                 : waits for the hand-back's report and idle audits:
 *                            DONE freed-reports idle moved-bytes
 *   EXIT                   : closes the engine, exits 0
 * </pre>
 */
public final class HandBackDecoderProcess
{
    static final int TURN_1 = 1;
    static final int TURN_1_DECODE = 2;
    static final int[] TURN_1_BLOCKS = {10, 11, 12};
    static final int[] DECODED_BLOCKS = {12, 13, 14};
    static final int[] HANDED_BACK = {10, 11, 12, 13, 14};
    static final String HAND_BACK_ID = "hand-back-7";

    private HandBackDecoderProcess()
    {
    }

    public static void main(String[] args) throws IOException
    {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        byte[] secret = Files.readAllBytes(Path.of(args[1]));
        try (HandBackEngine decoder = new HandBackEngine("decode", args[0], secret)) {
            out.println(ChildJvm.PREFIX + "READY");
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.startsWith(ChildJvm.PREFIX)) {
                    continue;
                }
                String[] words = line.substring(ChildJvm.PREFIX.length()).split(" ");
                switch (words[0]) {
                    case "TURN1" -> {
                        TransferParams params = TransferParamsJson.read(new String(Base64.getDecoder().decode(words[2]), StandardCharsets.UTF_8));
                        decoder.consumer.blocksAllocated("d-turn-1", params, TransferMode.valueOf(words[1]), ids(TURN_1_BLOCKS));
                        String failure = decoder.awaitReceived("d-turn-1");
                        if (failure != null) {
                            out.println(ChildJvm.PREFIX + "ERROR turn 1: " + failure);
                            continue;
                        }
                        long wrong = decoder.wrong(TURN_1, 0, TURN_1_BLOCKS);
                        decoder.fill(TURN_1_DECODE, 2, DECODED_BLOCKS);
                        TransferParams back = decoder.producer.prefillFinished(HAND_BACK_ID, ids(HANDED_BACK));
                        out.println(ChildJvm.PREFIX + "HANDBACK " + wrong + " "
                                + Base64.getEncoder().encodeToString(TransferParamsJson.write(back).getBytes(StandardCharsets.UTF_8)));
                    }
                    case "FINISH" -> {
                        List<FreedRequest> freed = decoder.awaitFreed();
                        boolean idle = decoder.awaitIdle();
                        out.println(ChildJvm.PREFIX + "DONE " + freed.toString().replace(' ', '_') + " " + idle + " " + decoder.movedBytes());
                    }
                    case "EXIT" -> {
                        return;
                    }
                    default -> out.println(ChildJvm.PREFIX + "ERROR unknown command " + words[0]);
                }
            }
        }
        finally {
            out.println(ChildJvm.PREFIX + "CLOSED");
        }
    }
}
