package io.kvbridge.backend.nixl;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractTransferBackendConformanceTest;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The same contract against an installed NIXL (profile {@code real-nixl}). Skipped, saying why,
 * where none is found or it cannot run; the fake is never accepted here.
 */
@Tag("real-nixl")
@ExtendWith(RequiresRealNixl.class)
@Timeout(300)
final class RealNixlConformanceTest extends AbstractTransferBackendConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new NixlBackendFactory(null, false);
    }

    @Override
    protected Map<String, String> config()
    {
        // NIXL's UCX opens its tcp transport; the test accepts it, as a deployment must
        return Map.of(NixlUcxSettings.ALLOW_UNCHECKED_TCP_LANE, "true");
    }

    @Override
    protected Optional<String> closedTargetMemoryReachable()
    {
        String fence = newFactory().probe().details().getOrDefault(NixlProbe.CLOSED_TARGET_FENCE, "none: the probe did not say");
        return fence.startsWith("registration") ? Optional.empty() : Optional.of(NixlProbe.CLOSED_TARGET_FENCE + "=" + fence);
    }
}
