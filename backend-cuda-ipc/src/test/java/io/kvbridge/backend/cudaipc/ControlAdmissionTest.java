package io.kvbridge.backend.cudaipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.backend.cudaipc.ControlAdmission.Pending;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The control socket's bounds on connections that have not authenticated, and whom they displace. */
final class ControlAdmissionTest
{
    private static final int UID = 1000;
    private static final int PEER_PID = 100;

    private int nextFd = 10;

    private Pending connection(int pid, int uid)
    {
        return new Pending(nextFd++, pid, uid, 0);
    }

    @Test
    void aFloodFromManyProcessesOfTheSameUserDisplacesItsOwnConnectionsNotAPeersThatHasNotSpokenYet()
    {
        ControlAdmission admission = new ControlAdmission();
        // a legitimate peer connects; its hello is not read yet when the flood's connections are accepted
        Pending peer = connection(PEER_PID, UID);
        assertEquals(List.of(), admission.admit(peer));
        // four processes of the same user, each within its own bound of 8, flood for a long while
        for (int i = 0; i < 1_000; i++) {
            List<Pending> displaced = admission.admit(connection(1 + i % 4, UID));
            assertFalse(displaced.contains(peer), "connection " + i + " of the flood displaced the peer's");
        }
        assertTrue(admission.size() <= ControlAdmission.MAX_PENDING_PER_UID, "pending " + admission.size());
        assertTrue(admission.remove(peer) == peer, "the peer's connection is still pending");
    }

    @Test
    void aFloodFromManyUsersDisplacesTheBusiestProcessNotAPeerWithOneConnection()
    {
        ControlAdmission admission = new ControlAdmission();
        Pending peer = connection(PEER_PID, UID);
        admission.admit(peer);
        // processes of users of their own, each within its user's and its own bound, fill the whole admission
        for (int i = 0; i < 1_000; i++) {
            List<Pending> displaced = admission.admit(connection(1 + i % 16, 2_000 + i % 16));
            assertFalse(displaced.contains(peer), "connection " + i + " of the flood displaced the peer's");
        }
        assertEquals(ControlAdmission.MAX_PENDING, admission.size());
    }

    @Test
    void aProcessOverItsOwnBoundDisplacesItsOwnOldestThatHasNotSaidHello()
    {
        ControlAdmission admission = new ControlAdmission();
        Pending[] own = new Pending[ControlAdmission.MAX_PENDING_PER_PID];
        for (int i = 0; i < own.length; i++) {
            own[i] = connection(7, UID);
            admission.admit(own[i]);
        }
        own[0].agent = "spoke";
        assertEquals(List.of(own[1]), admission.admit(connection(7, UID)));
    }
}
