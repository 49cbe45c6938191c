package io.kvbridge.spi.transfer;

import static io.kvbridge.spi.KvBridgeException.checkArgument;

/**
 * What a transport instance holds right now: the figures an idle audit checks for leaks.
 *
 * @param registrations allocations registered and not deregistered.
 * @param preparedLists prepared lists not released.
 * @param peers connected peers.
 * @param transfers posted transfers whose handles were not released.
 */
public record BackendResources(int registrations, int preparedLists, int peers, int transfers)
{
    /** Validates the counts. */
    public BackendResources
    {
        checkArgument(registrations >= 0 && preparedLists >= 0 && peers >= 0 && transfers >= 0,
                "negative resource count: registrations=%d preparedLists=%d peers=%d transfers=%d", registrations, preparedLists, peers, transfers);
    }

    /** Nothing held. */
    public static final BackendResources NONE = new BackendResources(0, 0, 0, 0);
}
