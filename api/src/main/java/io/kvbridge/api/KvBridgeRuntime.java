package io.kvbridge.api;

/**
 * The implementation behind {@link KvBridge#builder()}, provided by {@code kvbridge-core} through
 * {@link java.util.ServiceLoader}. Not for plugins.
 */
public interface KvBridgeRuntime
{
    /**
     * Starts a bridge.
     *
     * @param settings the builder's settings.
     * @return the started bridge.
     */
    KvBridge start(KvBridge.Builder settings);
}
