package io.kvbridge.spi.transfer;

/** Direction of a transfer, seen from the initiator. */
public enum TransferOp
{
    /** Pull: remote descriptors are copied into local ones. */
    READ,
    /** Push: local descriptors are copied into remote ones. */
    WRITE
}
