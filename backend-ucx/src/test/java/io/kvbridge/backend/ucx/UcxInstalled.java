package io.kvbridge.backend.ucx;

import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Skips each test of a class, with the reason, where the UCX libraries are not installed (and
 * fails it where UCX is required, see {@link UcxTestSupport}). Decided per test rather than per
 * class, and before any set-up, a base class's included: a class skipped as a whole, or by an
 * assumption in {@code @BeforeAll}, is not counted by the test report, and would vanish from it.
 */
final class UcxInstalled implements ExecutionCondition
{
    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context)
    {
        if (context.getTestMethod().isEmpty()) {
            return ConditionEvaluationResult.enabled("decided for each test, so that every skipped test is counted with its reason");
        }
        return UcxTestSupport.missing().map(ConditionEvaluationResult::disabled).orElseGet(() -> ConditionEvaluationResult.enabled("UCX is installed"));
    }
}
