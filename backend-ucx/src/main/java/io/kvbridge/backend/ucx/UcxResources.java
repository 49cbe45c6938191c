package io.kvbridge.backend.ucx;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads the transport resources out of {@code ucp_context_print_info} text. */
final class UcxResources
{
    // "#      resource 1  :  md 1  dev 1  flags -- tcp/lo"
    private static final Pattern RESOURCE = Pattern.compile("resource\\s+\\d+\\s*:.*--\\s*(\\S+)");

    private UcxResources()
    {
    }

    /**
     * Lists the resources a context selected.
     *
     * @param contextInfo what {@code ucp_context_print_info} wrote.
     * @return e.g. {@code tcp/lo, sysv/memory}; empty when none was listed.
     */
    static String transports(String contextInfo)
    {
        List<String> found = new ArrayList<>();
        Matcher matcher = RESOURCE.matcher(contextInfo);
        while (matcher.find()) {
            found.add(matcher.group(1));
        }
        return String.join(", ", found);
    }
}
