package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.Availability;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Prints what the ucx factory's probe says in this JVM, for tests that vary the JVM's options. */
public final class ProbeProcess
{
    private ProbeProcess()
    {
    }

    public static void main(String[] args) throws IOException
    {
        Availability availability = new UcxBackendFactory().probe();
        // whether the probe put UCX into this process, as the dynamic linker shows it
        boolean mapped = Files.readString(Path.of("/proc/self/maps")).contains("libucp.so");
        System.out.println(TransferProcess.PREFIX + "UCP_MAPPED " + mapped);
        System.out.println(TransferProcess.PREFIX + "AVAILABLE " + availability.available());
        for (String reason : availability.reasons()) {
            System.out.println(TransferProcess.PREFIX + "REASON " + reason);
        }
        System.out.println(TransferProcess.PREFIX + "DETAILS " + availability.details());
    }
}
