package io.kvbridge.examples.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** One command line run in-process: its exit code and what it printed. */
record CliRun(int exitCode, String out, String err)
{
    static CliRun of(String... args)
    {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = KvBridgeCli.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new CliRun(code, out.toString(), err.toString());
    }
}
