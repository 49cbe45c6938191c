package io.kvbridge.api;

/** Who moves the bytes of a request; chosen per request by the consumer. */
public enum TransferMode
{
    /** The producer WRITEs into blocks the consumer allocated and registered for the request. */
    PUSH,
    /** The consumer READs from the producer's blocks. */
    PULL
}
