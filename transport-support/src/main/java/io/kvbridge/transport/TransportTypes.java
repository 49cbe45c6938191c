package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

/**
 * What {@link AbstractTransferBackend} checks a caller's handles and notifications against before
 * a transport sees them: the transport's own peer and prepared-list classes, and the longest
 * notification its wire carries.
 *
 * @param <P> the transport's peer class.
 * @param <L> the transport's prepared-list class.
 * @param peer the peer class {@code connect} returns.
 * @param list the list class {@code prepareLocal} and {@code prepareRemote} return.
 * @param maxNotificationBytes the longest notification {@code notify} and {@code post} accept;
 *     {@link Integer#MAX_VALUE} where none crosses a wire.
 */
public record TransportTypes<P extends TransportPeer, L extends OwnedPreparedList>(Class<P> peer, Class<L> list, int maxNotificationBytes)
{
    /** Checks the parts. */
    public TransportTypes
    {
        requireNonNull(peer, "peer is null");
        requireNonNull(list, "list is null");
        if (maxNotificationBytes < 0) {
            throw new IllegalArgumentException("maxNotificationBytes=" + maxNotificationBytes + "; expected 0 or more");
        }
    }
}
