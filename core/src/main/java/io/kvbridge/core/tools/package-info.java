/**
 * What tools and test suites outside kvbridge-core may call, each a narrow entry to an internal part:
 * {@link io.kvbridge.core.tools.GeometryRoundTrip} sends a geometry through the wire format, for the
 * testkit's layout conformance suite; {@link io.kvbridge.core.tools.PeerInspector} fetches and decodes
 * what a peer's side channel advertises; {@link io.kvbridge.core.tools.SideChannelDefaults} names the
 * side channel's defaults a tool sizes its checks by.
 */
package io.kvbridge.core.tools;
