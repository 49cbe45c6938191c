package io.kvbridge.core.local;

import io.kvbridge.spi.transfer.TransferBackendFactory;
import io.kvbridge.testkit.AbstractGrantedAccessConformanceTest;

/** The local transport refuses what no grant of its target covers, as every GRANTED_ACCESS transport does. */
final class LocalGrantedAccessTest extends AbstractGrantedAccessConformanceTest
{
    @Override
    protected TransferBackendFactory newFactory()
    {
        return new LocalBackendFactory();
    }
}
