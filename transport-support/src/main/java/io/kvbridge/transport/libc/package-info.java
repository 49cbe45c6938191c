/**
 * The one binding of the C library every transport, the testkit and the CLI use: descriptors,
 * processes and streams ({@link io.kvbridge.transport.libc.Libc}), Unix-domain sockets
 * ({@link io.kvbridge.transport.libc.LibcSockets}) and shareable memory
 * ({@link io.kvbridge.transport.libc.LibcMemory}). Every call that can fail captures {@code errno}
 * the same way, into the caller's {@link io.kvbridge.transport.libc.Errno}, which names it
 * ({@code EBADF}) and turns it into a typed error. A transport's own library (UCX, CUDA, NIXL) stays
 * bound in the transport.
 */
package io.kvbridge.transport.libc;
