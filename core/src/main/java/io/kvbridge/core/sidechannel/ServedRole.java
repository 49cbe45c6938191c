package io.kvbridge.core.sidechannel;

import java.util.Locale;

/**
 * Which of a rank's connectors a side channel entry describes. An engine that runs both kinds
 * ({@code kv_both}) serves a producer and a consumer under one {@code (ppRank, tpRank)}, each with
 * its own transport instance and notification sessions, so a client names the one it wants: a
 * consumer asks for producers, a producer for consumers.
 */
public enum ServedRole
{
    /** A producer (prefill) rank. */
    PRODUCER,
    /** A consumer (decode) rank. */
    CONSUMER;

    /** {@return the name the side channel's requests carry} */
    public String wireName()
    {
        return name().toLowerCase(Locale.ROOT);
    }

    /** {@return the role a rank of this role shakes hands with} */
    public ServedRole peer()
    {
        return this == PRODUCER ? CONSUMER : PRODUCER;
    }

    /**
     * Returns the role a request names.
     *
     * @param wireName the name as the request carries it.
     * @return the role, or null for an unknown name.
     */
    static ServedRole fromWire(String wireName)
    {
        for (ServedRole role : values()) {
            if (role.wireName().equals(wireName)) {
                return role;
            }
        }
        return null;
    }
}
