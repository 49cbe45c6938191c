package io.kvbridge.examples.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code kvbridge completion}: a bash (and zsh, through bashcompinit) completion script generated
 * from the command tree itself, so that it completes every command, option and listed value as the
 * running version has them.
 */
@Command(name = "completion", mixinStandardHelpOptions = true,
        description = {"Print a bash completion script for kvbridge (zsh: after 'autoload -U bashcompinit && bashcompinit').",
                "Use: source <(./kvbridge completion), or save it under /etc/bash_completion.d/kvbridge."})
final class CompletionCommand implements Callable<Integer>
{
    @Spec
    private CommandSpec spec;

    @Override
    public Integer call()
    {
        PrintWriter out = spec.commandLine().getOut();
        out.print(AutoComplete.bash(spec.root().name(), spec.root().commandLine()));
        out.flush();
        return 0;
    }
}
