/**
 * Conformance suites every transport and cache layout runs, and reference fakes; for test scope.
 */
module io.kvbridge.testkit
{
    requires transitive io.kvbridge.api;
    requires io.kvbridge.transport;
    requires transitive org.junit.jupiter.api;
    requires java.net.http;

    exports io.kvbridge.testkit;
    // JUnit instantiates the suites' subclasses and calls their inherited test methods reflectively
    opens io.kvbridge.testkit to org.junit.platform.commons;
}
