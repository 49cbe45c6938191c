package io.kvbridge.core.tools;

import io.kvbridge.core.sidechannel.SideChannelSettings;

/** The side channel's defaults that tools size their own checks by. */
public final class SideChannelDefaults
{
    private SideChannelDefaults()
    {
    }

    /**
     * {@return how many connections a side channel serves at once by default: every rank of one
     *     engine handshakes with the other's side channel at the same time, so no engine may have more}
     */
    public static int maxConnections()
    {
        return SideChannelSettings.builder().build().maxConnections();
    }
}
