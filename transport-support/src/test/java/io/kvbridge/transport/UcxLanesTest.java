package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

final class UcxLanesTest
{
    @Test
    void uncheckedDefaultsAndListsNamingTcpOrAllOpenTcp()
    {
        assertTrue(UcxLanes.mayUseTcp(""));
        assertTrue(UcxLanes.mayUseTcp("tcp"));
        assertTrue(UcxLanes.mayUseTcp("rc, tcp"));
        assertTrue(UcxLanes.mayUseTcp("all"));
        assertTrue(UcxLanes.mayUseTcp("^rc,sm"));
    }

    @Test
    void listsLeavingTcpOutOrExcludingItKeepTcpClosed()
    {
        assertFalse(UcxLanes.mayUseTcp("rc,sm"));
        assertFalse(UcxLanes.mayUseTcp("^tcp"));
        assertFalse(UcxLanes.mayUseTcp("^sm, tcp"));
        // a lane whose name merely starts with tcp is another lane
        assertFalse(UcxLanes.mayUseTcp("tcpx"));
    }
}
