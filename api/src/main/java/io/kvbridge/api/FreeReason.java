package io.kvbridge.api;

/** Why a producer may free a request's blocks. */
public enum FreeReason
{
    /** Every consumer rank that needed the blocks has them. */
    COMPLETED,
    /** No consumer finished within the lease: nobody will read the blocks any more. */
    EXPIRED,
    /** The engine aborted the request. */
    ABORTED
}
