package io.kvbridge.core.engine;

/** A producer or consumer rank: a role run by its own {@link RankRuntime}. */
sealed interface ConnectorRank permits ProducerRank, ConsumerRank
{
    /** {@return the runtime that runs the rank: its worker, transport, transfers in flight and peers} */
    RankRuntime runtime();
}
