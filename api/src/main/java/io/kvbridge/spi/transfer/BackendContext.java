package io.kvbridge.spi.transfer;

/**
 * Services the core hands a transport when it creates one. New services arrive as default methods.
 */
public interface BackendContext
{
    /**
     * Returns the name this transport instance goes by towards peers; unique per process.
     *
     * @return the agent name.
     */
    String agentName();
}
