package io.kvbridge.examples.demo;

/** The demo could not go on: a host failed or went away. The message says which and why. */
public final class DemoFailure extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    /** @param message what failed. */
    public DemoFailure(String message)
    {
        super(message);
    }
}
