package io.kvbridge.examples.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * How errors are reported: a refused command line in one line naming the value, why it is refused and
 * the fix, then where the options are described, never the whole usage, which would bury the one line
 * that matters; a runtime failure in one line prefixed like it.
 */
final class ErrorLines
{
    private ErrorLines()
    {
    }

    /**
     * Reports a usage error; a picocli {@code IParameterExceptionHandler}.
     *
     * @param exception the refused argument.
     * @param args the command line.
     * @return {@link KvBridgeCli#USAGE}.
     */
    static int report(ParameterException exception, String[] args)
    {
        CommandLine line = exception.getCommandLine();
        PrintWriter err = line.getErr();
        String message = oneLine(exception.getMessage());
        ArgSpec argument = exception.getArgSpec();
        if (exception.getCause() instanceof TypeConversionException && argument != null && argument.type().isEnum()) {
            // picocli's own text lists every constant twice, by name and as written
            List<String> values = new ArrayList<>();
            argument.completionCandidates().forEach(values::add);
            message = String.format(Locale.ROOT, "%s=%s is not one of %s", name(argument), exception.getValue(), String.join(", ", values));
        }
        if (exception instanceof UnmatchedArgumentException unmatched) {
            List<String> suggestions = unmatched.getSuggestions();
            if (!suggestions.isEmpty()) {
                message += "; did you mean " + String.join(" or ", suggestions.subList(0, Math.min(3, suggestions.size()))) + "?";
            }
        }
        err.println(prefix(line) + message);
        err.println("Try '" + line.getCommandSpec().qualifiedName() + " --help' for the options and their values.");
        err.flush();
        return KvBridgeCli.USAGE;
    }

    private static String name(ArgSpec argument)
    {
        return argument instanceof OptionSpec option ? option.longestName() : argument.paramLabel();
    }

    /** @return {@code kvbridge demo: } for the command that reports. */
    static String prefix(CommandLine line)
    {
        return line.getCommandSpec().qualifiedName() + ": ";
    }

    /** @return the message on one line, so that a log shows it whole. */
    static String oneLine(String message)
    {
        return message == null ? "failed without a message" : message.strip().replaceAll("\\s*\\R\\s*", " ");
    }
}
