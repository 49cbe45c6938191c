/**
 * Routing: which local region pairs with which peer region. Index routing pairs regions by
 * position where that is exact; layer-name routing pairs layers by their global names where the
 * sides pool layers differently or are split into pipeline stages
 * ({@link io.kvbridge.core.routing.Routing}). {@link io.kvbridge.core.routing.StageExchange}
 * routes every stage of a pipeline-parallel producer to every stage of a pipeline-parallel decoder
 * and derives the notifications each stage waits for. The entries routing produces feed
 * {@link io.kvbridge.core.planner.TransferPlan}.
 */
package io.kvbridge.core.routing;
