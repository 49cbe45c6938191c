package io.kvbridge.backend.nixl.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.util.Objects.requireNonNull;

import io.kvbridge.backend.nixl.ffm.NixlStatus.Meaning;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.transfer.NotificationSink;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The notifications of one {@link NixlAgent}: the one attached to the next request, one sent
 * without data, and the notification map received ones are drained through. Strings and bytes NIXL
 * lends (senders, messages) are copied before the next call.
 *
 * <p>Threads: the agent's (one at a time); its scratch memory lives in the agent's arena.
 */
final class NixlNotifications
{
    private static final Meaning NOTIFY = new Meaning(ErrorCode.INVALID_ARGUMENT, ErrorCode.NATIVE_ERROR, ErrorCode.PEER_UNKNOWN, true);

    private final NixlLibrary nixl;
    private final String agentName;
    // built once: the context of a check is built before the status is known
    private final String drainContext;
    private final Arena arena;
    private final MemorySegment outAddress;
    private final MemorySegment outData;
    private final MemorySegment outLong;
    private MemorySegment buffer;
    // the notification map, 0 once destroyed
    private long map;
    // the request options keep their notification between requests: skip the calls when unchanged
    private boolean optionsNotify;

    NixlNotifications(NixlLibrary nixl, String agentName, Arena arena) throws Throwable
    {
        this.nixl = requireNonNull(nixl, "nixl is null");
        this.agentName = requireNonNull(agentName, "agentName is null");
        this.drainContext = "draining notifications of agent " + agentName;
        this.arena = requireNonNull(arena, "arena is null");
        this.outAddress = arena.allocate(ADDRESS);
        this.outData = arena.allocate(ADDRESS);
        this.outLong = arena.allocate(JAVA_LONG);
        this.buffer = arena.allocate(256);
        check((int) nixl.createNotifMap.invokeExact(outAddress), "nixl_capi_create_notif_map", NixlStatus.INTERNAL, "creating the notification map");
        this.map = outAddress.get(JAVA_LONG, 0);
    }

    private void check(int status, String function, Meaning meaning, String context)
    {
        NixlStatus.check(status, function, meaning, nixl.level, context);
    }

    /**
     * Sets the notification of the next request; NIXL copies it into the request it makes.
     *
     * @param options the request options.
     * @param notification the bytes, or null for none.
     */
    void setForNextRequest(long options, byte[] notification) throws Throwable
    {
        if (notification == null) {
            if (optionsNotify) {
                check((int) nixl.optArgsSetHasNotif.invokeExact(options, false), "nixl_capi_opt_args_set_has_notif", NixlStatus.INTERNAL,
                        "clearing the notification");
                check((int) nixl.optArgsSetNotifMsg.invokeExact(options, 0L, 0L), "nixl_capi_opt_args_set_notif_msg", NixlStatus.INTERNAL,
                        "clearing the notification");
                optionsNotify = false;
            }
            return;
        }
        long message = 0;
        if (notification.length > 0) {
            if (buffer.byteSize() < notification.length) {
                buffer = arena.allocate(Math.max(notification.length, buffer.byteSize() * 2));
            }
            MemorySegment.copy(notification, 0, buffer, JAVA_BYTE, 0, notification.length);
            message = buffer.address();
        }
        int status = (int) nixl.optArgsSetNotifMsg.invokeExact(options, message, (long) notification.length);
        if (status != NixlStatus.SUCCESS) {
            throw NixlStatus.error("nixl_capi_opt_args_set_notif_msg", status, NixlStatus.INTERNAL, nixl.level,
                    "setting a notification of " + notification.length + " bytes");
        }
        if (!optionsNotify) {
            check((int) nixl.optArgsSetHasNotif.invokeExact(options, true), "nixl_capi_opt_args_set_has_notif", NixlStatus.INTERNAL,
                    "enabling the notification");
            optionsNotify = true;
        }
    }

    /** Sends a notification without data. */
    void send(long agent, String peer, byte[] message) throws Throwable
    {
        try (Arena call = Arena.ofConfined()) {
            // a valid pointer even for an empty message: NIXL treats NULL data as dubious
            MemorySegment data = call.allocate(Math.max(1, message.length));
            MemorySegment.copy(message, 0, data, JAVA_BYTE, 0, message.length);
            check((int) nixl.genNotif.invokeExact(agent, call.allocateFrom(peer), data, (long) message.length, 0L), "nixl_capi_gen_notif", NOTIFY,
                    "sending a notification of " + message.length + " bytes to peer " + peer);
        }
    }

    /** Moves every notification received so far into a sink; returns how many. */
    int drain(long agent, NotificationSink sink) throws Throwable
    {
        check((int) nixl.getNotifs.invokeExact(agent, map, 0L), "nixl_capi_get_notifs", NixlStatus.INTERNAL, drainContext);
        check((int) nixl.notifMapSize.invokeExact(map, outLong), "nixl_capi_notif_map_size", NixlStatus.INTERNAL, "counting notification senders");
        long senders = outLong.get(JAVA_LONG, 0);
        if (senders == 0) {
            return 0;
        }
        int drained = 0;
        try {
            for (long i = 0; i < senders; i++) {
                check((int) nixl.notifMapGetAgentAt.invokeExact(map, i, outAddress), "nixl_capi_notif_map_get_agent_at", NixlStatus.INTERNAL,
                        "reading sender " + i);
                // borrowed from the map until it changes: used as the key below, copied for the sink
                MemorySegment senderName = outAddress.get(ADDRESS, 0);
                String sender = NixlMemory.string(senderName);
                check((int) nixl.notifMapGetNotifsSize.invokeExact(map, senderName, outLong), "nixl_capi_notif_map_get_notifs_size", NixlStatus.INTERNAL,
                        "counting notifications from " + sender);
                long count = outLong.get(JAVA_LONG, 0);
                for (long j = 0; j < count; j++) {
                    check((int) nixl.notifMapGetNotif.invokeExact(map, senderName, j, outData, outLong), "nixl_capi_notif_map_get_notif",
                            NixlStatus.INTERNAL, "reading notification " + j + " from " + sender);
                    sink.accept(sender, NixlMemory.bytes(outData.get(ADDRESS, 0), outLong.get(JAVA_LONG, 0)));
                    drained++;
                }
            }
        }
        finally {
            // the map appends: clear it, or the same messages come back on the next drain
            check((int) nixl.notifMapClear.invokeExact(map), "nixl_capi_notif_map_clear", NixlStatus.INTERNAL, "clearing the notification map");
        }
        return drained;
    }

    /**
     * Destroys the map; idempotent.
     *
     * @return why NIXL refused, or null.
     */
    KvBridgeException close() throws Throwable
    {
        long closing = map;
        map = 0;
        if (closing == 0) {
            return null;
        }
        int status = (int) nixl.destroyNotifMap.invokeExact(closing);
        return status == NixlStatus.SUCCESS ? null : NixlStatus.error("nixl_capi_destroy_notif_map", status, NixlStatus.INTERNAL, nixl.level,
                "closing agent " + agentName);
    }
}
