package io.kvbridge.netlab;

import static java.util.Objects.requireNonNull;

/**
 * What the frame relay of an impaired host's cable has done so far, per direction (see
 * {@link VirtualHosts#impair}): frames from the host towards the bridge, and from the bridge
 * towards the host. A large TCP segment (GSO) counts as one frame, as it does for netem.
 *
 * @param toBridge frames the host sent.
 * @param toHost frames sent to the host.
 */
public record RelayCounters(Direction toBridge, Direction toHost)
{
    /** Checks the values. */
    public RelayCounters
    {
        requireNonNull(toBridge, "toBridge is null");
        requireNonNull(toHost, "toHost is null");
    }

    /**
     * One direction's frames.
     *
     * @param received frames read from the sending side.
     * @param forwarded frames written to the other side after the delay.
     * @param forwardedBytes their bytes, Ethernet headers included.
     * @param lost frames dropped at random (the loss).
     * @param overflowed frames dropped because the direction's queue was full.
     * @param failed frames the other side refused (its interface down, say).
     * @param truncated frames too large for the relay's buffer, dropped.
     * @param queued frames waiting for their time.
     */
    public record Direction(long received, long forwarded, long forwardedBytes, long lost, long overflowed, long failed, long truncated, long queued)
    {
        /** Checks the values. */
        public Direction
        {
            if (received < 0 || forwarded < 0 || forwardedBytes < 0 || lost < 0 || overflowed < 0 || failed < 0 || truncated < 0 || queued < 0) {
                throw new IllegalArgumentException("frame counts must not be negative: received=" + received + " forwarded=" + forwarded + " forwardedBytes="
                        + forwardedBytes + " lost=" + lost + " overflowed=" + overflowed + " failed=" + failed + " truncated=" + truncated + " queued=" + queued);
            }
        }

        /** {@return the share of received frames lost at random, 0 when none were received} */
        public double lossShare()
        {
            return received == 0 ? 0 : (double) lost / received;
        }

        /** {@return the forwarded frames' mean size in bytes, 0 when none were forwarded} */
        public double meanFrameBytes()
        {
            return forwarded == 0 ? 0 : (double) forwardedBytes / forwarded;
        }
    }

    /** {@return frames received in both directions} */
    public long received()
    {
        return toBridge.received() + toHost.received();
    }

    /** {@return frames lost at random in both directions} */
    public long lost()
    {
        return toBridge.lost() + toHost.lost();
    }
}
