package io.kvbridge.backend.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.transfer.PreparedList;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.spi.transfer.TransferOp;
import io.kvbridge.spi.transfer.TransferRequest;
import io.kvbridge.spi.transfer.TransferStatus;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole transport contract through the real FFM binding against a fake NIXL, in one of the
 * fake's completion modes. After each test and its tear-down the fake holds nothing and saw no
 * stale handle. The fake ends the process at the first two calls that overlap on one agent, as
 * NIXL's lock-free agent would corrupt itself.
 */
@Timeout(180)
abstract class AbstractNixlFakeConformanceTest extends AbstractTransferBackendConformanceTest
{
    @RegisterExtension
    final FakeLeakCheck leakCheck = new FakeLeakCheck(fake());

    /** @return the fake library under test. */
    abstract FakeNixl fake();

    /** @return the fake's completion mode: async, inline or polls:N. */
    abstract String completion();

    @BeforeEach
    void selectCompletion()
    {
        fake().option("completion", completion());
    }

    @AfterEach
    void restoreCompletion()
    {
        fake().option("completion", "async");
    }

    @Override
    protected TransferBackendFactory newFactory()
    {
        return fake().factory();
    }

    @Override
    protected Map<String, String> config()
    {
        return fake().options();
    }

    /**
     * Posters make their requests themselves when the owner leaves the agent free and hand them over
     * when it does not; either way one thread at a time calls NIXL, also while the owner prepares and
     * releases lists for another thread and polls what runs.
     */
    @Test
    void postsFromManyThreadsNeverOverlapTheOwnersWork() throws Exception
    {
        PreparedList local = initiator.prepareLocal(blocksOf(initiatorMemory, BLOCKS, BLOCK_BYTES));
        PreparedList remote = initiator.prepareRemote(targetPeer, blocksOf(targetMemory, BLOCKS, BLOCK_BYTES));
        int posters = 3;
        int rounds = 200;
        AtomicBoolean posting = new AtomicBoolean(true);
        ExecutorService executor = Executors.newFixedThreadPool(posters + 1);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (int t = 0; t < posters; t++) {
                int block = t;
                results.add(executor.submit(() -> {
                    int done = 0;
                    for (int i = 0; i < rounds; i++) {
                        long handle = initiator.post(new TransferRequest().start(TransferOp.WRITE).local(local, new int[] {block})
                                .remote(remote, new int[] {block}).count(1));
                        if (awaitTerminal(initiator, handle) == TransferStatus.DONE) {
                            done++;
                        }
                        initiator.release(handle);
                    }
                    return done;
                }));
            }
            // owner work meanwhile: each prepare and release runs on the owner thread, under the agent lock
            Future<Integer> churn = executor.submit(() -> {
                int lists = 0;
                while (posting.get()) {
                    initiator.releasePrepared(initiator.prepareRemote(targetPeer, blocksOf(targetMemory, 4, BLOCK_BYTES)));
                    lists++;
                }
                return lists;
            });
            for (Future<Integer> result : results) {
                assertEquals(rounds, result.get(), "every post ends DONE");
            }
            posting.set(false);
            churn.get();
        }
        finally {
            posting.set(false);
            executor.shutdownNow();
        }
        for (int b = 0; b < posters; b++) {
            assertBlock(targetMemory, b, initiatorMemory, b, "write from poster " + b);
        }
    }
}
