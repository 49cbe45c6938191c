package io.kvbridge.testkit;

import io.kvbridge.spi.layout.CacheLayoutFactory;

/** The reference fake layout keeps the whole layout contract. */
final class TestingCacheLayoutConformanceTest extends TestingLayoutCases
{
    @Override
    protected CacheLayoutFactory newFactory()
    {
        return new TestingCacheLayoutFactory();
    }
}
