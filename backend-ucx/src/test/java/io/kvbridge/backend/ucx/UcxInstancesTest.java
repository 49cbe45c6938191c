package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.fail;

import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferStatus;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;

/** Tests that open ucx instances and native memory: skipped without UCX, both closed after each test. */
@ExtendWith(UcxInstalled.class)
abstract class UcxInstancesTest
{
    /** Instances the test opened, closed after it. */
    final List<TransferBackend> backends = new ArrayList<>();
    /** Memory of the test, freed after its instances closed. */
    Arena arena;

    @BeforeEach
    void openArena()
    {
        arena = Arena.ofShared();
    }

    /** {@return the status a transfer ends with, polled for at most 30 s} */
    static TransferStatus awaitTerminal(TransferBackend backend, long handle)
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            TransferStatus status = backend.status(handle);
            if (status.terminal()) {
                return status;
            }
            Thread.onSpinWait();
        }
        return fail("transfer still in progress after 30 s");
    }

    @AfterEach
    void closeAll()
    {
        backends.forEach(TransferBackend::close);
        arena.close();
    }
}
