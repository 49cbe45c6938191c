package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.Availability;

/** Prints what the ucx factory's probe says in this JVM, for tests that vary the JVM's options. */
public final class ProbeProcess
{
    private ProbeProcess()
    {
    }

    public static void main(String[] args)
    {
        Availability availability = new UcxBackendFactory().probe();
        System.out.println(TransferProcess.PREFIX + "AVAILABLE " + availability.available());
        for (String reason : availability.reasons()) {
            System.out.println(TransferProcess.PREFIX + "REASON " + reason);
        }
        System.out.println(TransferProcess.PREFIX + "DETAILS " + availability.details());
    }
}
