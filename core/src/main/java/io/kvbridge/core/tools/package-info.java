/**
 * What tools and test suites outside kvbridge-core may call, each a narrow entry to an internal part:
 * {@link io.kvbridge.core.tools.GeometryRoundTrip} sends a geometry through the wire format, for the
 * testkit's layout conformance suite; {@link io.kvbridge.core.tools.PeerInspector} fetches and decodes
 * what a peer's side channel advertises; {@link io.kvbridge.core.tools.AuthenticatedPeerClient} plays a
 * peer holding the shared secret (an engine's published transport metadata, a transport's connection
 * key), for tools and tests; {@link io.kvbridge.core.tools.SideChannelDefaults} names the
 * side channel's defaults a tool sizes its checks by; {@link io.kvbridge.core.tools.ControlEnvelope}
 * and {@link io.kvbridge.core.tools.ControlMessage} frame a tool's own request-reply connection (the
 * two-host bench's control link) as the side channel's messages are: authenticated envelopes around
 * msgpack maps, decoded within the side channel's limits.
 */
package io.kvbridge.core.tools;
