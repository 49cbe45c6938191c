package io.kvbridge.core.plugin;

import java.util.regex.Pattern;

/** The rule every plugin name follows. */
final class PluginNames
{
    private static final Pattern VALID = Pattern.compile("[a-z][a-z0-9-]{0,63}");

    private PluginNames()
    {
    }

    static boolean valid(String name)
    {
        return name != null && VALID.matcher(name).matches();
    }

    static String rule()
    {
        return "lowercase ASCII letters, digits and '-', starting with a letter, at most 64 characters";
    }
}
