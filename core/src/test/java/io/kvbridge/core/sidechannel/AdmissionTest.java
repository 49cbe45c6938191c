package io.kvbridge.core.sidechannel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.net.InetAddress;
import java.net.Socket;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which pending connection goes when a bound is reached. The sockets are unconnected: none has
 * anything to read, so each is as silent as a flood's.
 */
final class AdmissionTest
{
    private static final InetAddress SERVER = address(10, 0, 0, 5);
    private static final InetAddress OTHER_HOST = address(10, 0, 0, 9);

    @Test
    void anotherHostIsHeldToItsShareWhileThisHostsProcessesShareOnlyTheTotal()
    {
        Admission admission = new Admission(8, 2, 4);
        List<Admission.Connection> remote = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            remote.add(new Admission.Connection(new Socket(), OTHER_HOST, SERVER));
        }
        assertEquals(List.of(), admission.admit(remote.get(0)));
        assertEquals(List.of(), admission.admit(remote.get(1)));
        // another host's third displaces its own oldest
        List<Admission.Connection> displaced = admission.admit(remote.get(2));
        assertEquals(1, displaced.size());
        assertSame(remote.get(0), displaced.getFirst());
        assertEquals(2, admission.pendingCount());

        // this host's ranks, from loopback and from the address they connect to, all wait: six of them
        // from two addresses, over the share of two per address, within the total of eight
        for (int i = 0; i < 3; i++) {
            assertEquals(List.of(), admission.admit(new Admission.Connection(new Socket(), InetAddress.getLoopbackAddress(), InetAddress.getLoopbackAddress())));
            assertEquals(List.of(), admission.admit(new Admission.Connection(new Socket(), SERVER, SERVER)));
        }
        assertEquals(8, admission.pendingCount());
        // past the total, the oldest silent one goes, whichever host it came from
        displaced = admission.admit(new Admission.Connection(new Socket(), InetAddress.getLoopbackAddress(), InetAddress.getLoopbackAddress()));
        assertEquals(1, displaced.size());
        assertSame(remote.get(1), displaced.getFirst());
        assertEquals(8, admission.pendingCount());
    }

    private static InetAddress address(int a, int b, int c, int d)
    {
        try {
            return InetAddress.getByAddress(new byte[] {(byte) a, (byte) b, (byte) c, (byte) d});
        }
        catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }
}
