package io.kvbridge.backend.ucx;

import io.kvbridge.spi.transfer.TransferBackend;
import java.util.HashMap;
import java.util.Map;

/** Opens one ucx instance with the options given as {@code key=value} arguments, says so, and closes it. */
public final class InstanceProcess
{
    private InstanceProcess()
    {
    }

    public static void main(String[] args)
    {
        Map<String, String> options = new HashMap<>();
        for (String arg : args) {
            int equals = arg.indexOf('=');
            options.put(arg.substring(0, equals), arg.substring(equals + 1));
        }
        try (TransferBackend backend = new UcxBackendFactory().create(options, () -> "instance-process")) {
            System.out.println(TransferProcess.PREFIX + "OPEN " + ((UcxTransferBackend) backend).transports());
        }
        System.out.println(TransferProcess.PREFIX + "CLOSED");
    }
}
