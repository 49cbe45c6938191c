/**
 * The transfer planner: pure functions over two ranks' cache geometries that decide, before any
 * memory is registered, whether the ranks can exchange blocks and exactly which bytes move where.
 *
 * <ul>
 *   <li>{@link io.kvbridge.core.planner.TpPlan}: remote ranks to talk to and read heads from, and in
 *       push which of them a producer rank writes.</li>
 *   <li>{@link io.kvbridge.core.planner.TransferPlan}: checked pairing of local and remote regions
 *       ({@link io.kvbridge.core.planner.TransferEntry}), the descriptor lists to prepare once,
 *       and per-request descriptor indices.</li>
 *   <li>{@link io.kvbridge.core.planner.BlockSelection}: a request's block ids and their kernel,
 *       ratio and prefix-trim transformations, without copying.</li>
 *   <li>{@link io.kvbridge.transport.DescriptorPairs}: index pairs resolved to copies,
 *       optionally coalesced.</li>
 * </ul>
 *
 * <p>Which regions pair is decided by {@link io.kvbridge.core.routing}. Descriptors live in
 * primitive arrays; the per-request path allocates nothing.
 */
package io.kvbridge.core.planner;
