package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackend;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/** Tests that open ucx instances and native memory: skipped without UCX, both closed after each test. */
abstract class UcxInstancesTest
{
    /** Instances the test opened, closed after it. */
    final List<TransferBackend> backends = new ArrayList<>();
    /** Memory of the test, freed after its instances closed. */
    Arena arena;

    @BeforeAll
    static void requireUcx()
    {
        UcxTestSupport.assumeUcxInstalled();
    }

    @BeforeEach
    void openArena()
    {
        arena = Arena.ofShared();
    }

    @AfterEach
    void closeAll()
    {
        backends.forEach(TransferBackend::close);
        arena.close();
    }
}
