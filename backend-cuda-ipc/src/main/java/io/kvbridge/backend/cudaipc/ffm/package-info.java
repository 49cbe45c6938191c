/**
 * Internal: the FFM bindings of the CUDA driver API ({@code libcuda.so.1}) and of the few libc
 * functions the transport needs (Unix-domain sockets that pass file descriptors, memfd, mmap,
 * poll). Not API. Pointers and handles leave this package as {@code long}s.
 */
package io.kvbridge.backend.cudaipc.ffm;
