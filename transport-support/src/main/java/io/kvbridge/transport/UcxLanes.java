package io.kvbridge.transport;

/**
 * What a {@code UCX_TLS} value lets UCX open. Both transports built on UCX ({@code ucx} directly,
 * {@code nixl} through NIXL's UCX backend) refuse UCX's tcp lane unless the user accepts it, because
 * that lane's wire protocol writes wherever a put request names for anyone who reaches its port.
 */
public final class UcxLanes
{
    /** The environment variable UCX reads its transport list from. */
    public static final String TLS_ENVIRONMENT = "UCX_TLS";

    private UcxLanes()
    {
    }

    /**
     * {@return whether a UCX_TLS value lets UCX open its tcp transport: empty (UCX's default lanes),
     * a list naming {@code tcp} or {@code all}, or an exclusion list ({@code ^...}) not naming tcp}
     *
     * @param lanes the value, stripped; empty when the variable is unset
     */
    public static boolean mayUseTcp(String lanes)
    {
        if (lanes.isEmpty()) {
            return true;
        }
        boolean excluding = lanes.startsWith("^");
        for (String name : (excluding ? lanes.substring(1) : lanes).split(",")) {
            String lane = name.strip();
            if (lane.equals("tcp") || (!excluding && lane.equals("all"))) {
                return !excluding;
            }
        }
        return excluding;
    }
}
