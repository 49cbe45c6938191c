/**
 * The transport toolkit: what every {@link io.kvbridge.spi.transfer.TransferBackend} needs and the
 * SPI does not promise, so a transport is its native calls plus a few hundred lines of its own.
 * Not part of the SPI: it may change between releases, and plugins that use it ship against the
 * version they were built with.
 *
 * <ul>
 *   <li>{@link io.kvbridge.transport.AbstractTransferBackend}: the SPI methods every transport on
 *       the toolkit answers the same way;</li>
 *   <li>{@link io.kvbridge.transport.InstanceGuard}: identity, open/closed, and the owner token
 *       that makes a peer or list usable only by the instance that made it;</li>
 *   <li>{@link io.kvbridge.transport.TransferTable} of {@link io.kvbridge.transport.TransferSlot}s:
 *       generation-checked handles, status, failure, release, max-in-flight; and
 *       {@link io.kvbridge.transport.RunningTransfers}, the ones an owner thread still polls;</li>
 *   <li>{@link io.kvbridge.transport.Registrations}, {@link io.kvbridge.transport.OwnedPreparedList},
 *       {@link io.kvbridge.transport.PreparedLists}, {@link io.kvbridge.transport.TransportPeer}:
 *       registered memory, checked descriptor lists and peers, and
 *       {@link io.kvbridge.transport.RegionCover} for regions a transport keeps itself;</li>
 *   <li>{@link io.kvbridge.transport.PostChecks} and {@link io.kvbridge.transport.DescriptorPairs}:
 *       the post checks and descriptor-pair coalescing;</li>
 *   <li>{@link io.kvbridge.transport.OwnerThread}: the one thread making native calls, with its
 *       allocation-free hand-over queue, and {@link io.kvbridge.transport.RunningTransfers}, the
 *       transfers it polls;</li>
 *   <li>{@link io.kvbridge.transport.Inbox}: notifications and the wake-up promise;</li>
 *   <li>{@link io.kvbridge.transport.NativeLibrary}: locating, loading and binding a library, the
 *       kill switch, native statuses as typed errors.</li>
 * </ul>
 */
package io.kvbridge.transport;
