package io.kvbridge.core.wire;

import java.util.concurrent.atomic.AtomicLong;

/** Counts how the messages one authenticator opened fared; all counters only grow. */
public final class AuthenticationCounters
{
    final AtomicLong accepted = new AtomicLong();
    final AtomicLong badMac = new AtomicLong();
    final AtomicLong replayed = new AtomicLong();
    final AtomicLong stale = new AtomicLong();
    final AtomicLong unauthenticated = new AtomicLong();
    final AtomicLong overloaded = new AtomicLong();

    /** Creates counters at zero. */
    public AuthenticationCounters()
    {
    }

    /** {@return messages whose MAC, timestamp and nonce passed (or every message without a secret)} */
    public long accepted()
    {
        return accepted.get();
    }

    /** {@return messages whose MAC did not verify: wrong secret or tampered bytes} */
    public long badMac()
    {
        return badMac.get();
    }

    /** {@return messages whose nonce was seen before within the timestamp window} */
    public long replayed()
    {
        return replayed.get();
    }

    /** {@return messages whose timestamp lay outside the window} */
    public long stale()
    {
        return stale.get();
    }

    /** {@return messages without MAC, nonce or timestamp while a secret is configured} */
    public long unauthenticated()
    {
        return unauthenticated.get();
    }

    /** {@return messages refused because the nonce cache was full} */
    public long overloaded()
    {
        return overloaded.get();
    }

    /** {@return every message refused for any reason above} */
    public long rejected()
    {
        return badMac() + replayed() + stale() + unauthenticated() + overloaded();
    }

    @Override
    public String toString()
    {
        return "AuthenticationCounters[accepted=" + accepted() + ", badMac=" + badMac() + ", replayed=" + replayed() + ", stale=" + stale()
                + ", unauthenticated=" + unauthenticated() + ", overloaded=" + overloaded() + "]";
    }
}
