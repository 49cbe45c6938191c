/**
 * Internal: the FFM binding of NIXL's C API ({@code libnixl_capi.so}). Not API. Only primitives,
 * arrays and strings leave this package; native handles never do as {@code MemorySegment}s.
 *
 * <p>Every call into an agent happens on the thread that opened it: NIXL's default agent takes no
 * lock, so the transport serialises its native work on one owner thread.
 */
package io.kvbridge.backend.nixl.ffm;
