/**
 * TLS 1.3 for kvbridge's control connections: what {@link io.kvbridge.core.config.TlsLoader} makes of
 * the configured certificate, key and trust files, and the sockets an engine's side channel (or a tool
 * speaking to one) opens with them.
 */
package io.kvbridge.core.tls;
