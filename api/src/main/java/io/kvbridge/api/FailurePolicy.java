package io.kvbridge.api;

/** What a consumer engine should do with a request whose blocks could not be received. */
public enum FailurePolicy
{
    /** Fail the request. */
    FAIL,
    /** Recompute the request from its first invalid block on. */
    RECOMPUTE
}
