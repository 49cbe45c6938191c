package io.kvbridge.spi.geometry;

/** The kind of cache spec shared by the layers of one cache group. */
public enum GroupKind
{
    /** Full attention: every block of the prompt is kept. */
    FULL_ATTENTION,
    /** Sliding-window attention: only the blocks covering the last window of tokens matter. */
    SLIDING_WINDOW,
    /** Multi-head latent attention: one latent per token, the same on every tensor-parallel rank. */
    MLA,
    /**
     * Per-request recurrent state (Mamba/SSM): a block is one whole state, not a run of tokens. A
     * request holds one state block, or several when prefix caching keeps a state at each block
     * boundary. The group's {@link CacheGroup#state() components} say what a state holds.
     */
    MAMBA
}
