package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;

/** The UCX transport keeps the whole contract over TCP on loopback (UCX_TLS=tcp, UCX_NET_DEVICES=lo). */
final class UcxTcpConformanceTest extends AbstractTransferBackendConformanceTest
{
    @BeforeAll
    static void requireUcx()
    {
        UcxTestSupport.assumeUcxInstalled();
    }

    @Override
    protected TransferBackendFactory newFactory()
    {
        return new UcxBackendFactory();
    }

    @Override
    protected Map<String, String> config()
    {
        return Map.of("tls", "tcp", "net-devices", "lo");
    }
}
