/**
 * The core's side of discovery: what each rank publishes in the configured
 * {@link io.kvbridge.spi.discovery.EngineDirectory} (its side-channel address and the handshake
 * payload its side channel serves, in {@link io.kvbridge.core.discovery.PublishedRank}'s msgpack
 * envelope), and how handshakes find a producer's side channel by engine id through it.
 */
package io.kvbridge.core.discovery;
