package io.kvbridge.api;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.List;

/**
 * What {@link KvBridge#health()} found: one check per part of the bridge that can fail on its own,
 * each the result of a probe run during the call.
 *
 * @param healthy true when every check passed.
 * @param checks every check, passed or failed, in a stable order.
 */
public record Health(boolean healthy, List<Check> checks)
{
    /** Validates that {@code healthy} agrees with the checks, and copies them. */
    public Health
    {
        checks = List.copyOf(requireNonNull(checks, "checks is null"));
        checkArgument(!checks.isEmpty(), "a health report needs at least one check");
        int failed = 0;
        for (Check check : checks) {
            failed += check.ok() ? 0 : 1;
        }
        checkArgument(healthy == (failed == 0), "healthy=%s but %d of %d checks failed", healthy, failed, checks.size());
    }

    /**
     * Builds a report from its checks.
     *
     * @param checks the checks.
     * @return the report, healthy when every check passed.
     */
    public static Health of(List<Check> checks)
    {
        return new Health(requireNonNull(checks, "checks is null").stream().allMatch(Check::ok), checks);
    }

    /**
     * Returns the failed checks as lines to log or show.
     *
     * @return {@code name: detail} of each failed check, in order; empty when healthy.
     */
    public List<String> problems()
    {
        List<String> problems = new ArrayList<>();
        for (Check check : checks) {
            if (!check.ok()) {
                problems.add(check.name() + ": " + check.detail());
            }
        }
        return List.copyOf(problems);
    }

    /**
     * One probe's result.
     *
     * @param name what was probed, such as {@code transport} or {@code side channel prefill}; the same
     *     part keeps its name across calls.
     * @param ok whether the probe passed.
     * @param detail what the probe found, with the values involved; when it failed, also what to do.
     */
    public record Check(String name, boolean ok, String detail)
    {
        /** Validates the values. */
        public Check
        {
            requireNonNull(name, "name is null");
            requireNonNull(detail, "detail is null");
            checkArgument(!name.isBlank(), "check name is blank");
        }

        /**
         * A passed check.
         *
         * @param name what was probed.
         * @param detail what was found.
         * @return the check.
         */
        public static Check passed(String name, String detail)
        {
            return new Check(name, true, detail);
        }

        /**
         * A failed check.
         *
         * @param name what was probed.
         * @param detail what failed, with the values involved, and what to do.
         * @return the check.
         */
        public static Check failed(String name, String detail)
        {
            return new Check(name, false, detail);
        }
    }
}
