package io.kvbridge.backend.nixl;

import io.kvbridge.spi.transfer.Availability;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Runs a test class only where an installed NIXL can run (the fake is never accepted); elsewhere the
 * class is skipped with every reason the probe gave and how to run it.
 */
final class RequiresRealNixl implements ExecutionCondition
{
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context)
    {
        Availability availability = new NixlBackendFactory(null, false).probe();
        if (availability.available()) {
            return ConditionEvaluationResult.enabled("NIXL found: " + availability.details());
        }
        String reason = "no usable NIXL here, so the real-NIXL tests are skipped: " + String.join("; ", availability.reasons())
                + ". To run them, install NIXL 0.10.1 or newer and run: UCX_ERROR_SIGNALS= mvn -pl backend-nixl -am verify -Preal-nixl -D"
                + NixlBackendFactory.LIBRARY_PROPERTY + "=<directory of libnixl_capi.so>";
        System.err.println(reason);
        return ConditionEvaluationResult.disabled(reason);
    }
}
