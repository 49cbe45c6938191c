package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.transfer.BackendContext;
import io.kvbridge.spi.transfer.TransferBackend;
import io.kvbridge.spi.transfer.TransferBackendFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A factory that wraps every instance another factory creates in a {@link FaultInjectingTransferBackend};
 * each instance draws from its own stream, seeded from the plan's seed and the instance's number.
 */
public final class FaultInjectingBackendFactory extends ForwardingBackendFactory
{
    private final FaultPlan plan;
    private final List<FaultInjectingTransferBackend> created = new ArrayList<>();

    /**
     * Wraps a factory.
     *
     * @param delegate creates the transports that move the bytes.
     * @param plan what to break.
     */
    public FaultInjectingBackendFactory(TransferBackendFactory delegate, FaultPlan plan)
    {
        super(delegate);
        this.plan = requireNonNull(plan, "plan is null");
    }

    @Override
    public synchronized TransferBackend create(Map<String, String> config, BackendContext context)
    {
        FaultPlan instancePlan = new FaultPlan(plan.seed() * 31 + created.size(), plan.dropNotification(), plan.duplicateNotification(),
                plan.delayNotification(), plan.maxDelayDrains(), plan.failPost(), plan.errorTransfer(), plan.stallTransfer());
        FaultInjectingTransferBackend backend = new FaultInjectingTransferBackend(delegate.create(config, context), instancePlan);
        created.add(backend);
        return backend;
    }

    /** {@return every instance created so far, in creation order} */
    public synchronized List<FaultInjectingTransferBackend> created()
    {
        return List.copyOf(created);
    }
}
