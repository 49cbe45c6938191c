package io.kvbridge.backend.ucx;

import java.util.Map;

/** The UCX transport keeps the whole contract over TCP on loopback (UCX_TLS=tcp, UCX_NET_DEVICES=lo), with the
 * opt-in to that lane. */
final class UcxTcpConformanceTest extends UcxConformanceTestBase
{
    @Override
    protected Map<String, String> config()
    {
        return Map.of("tls", "tcp", "net-devices", "lo", UcxOptions.ALLOW_UNCHECKED_TCP_LANE, "true");
    }
}
