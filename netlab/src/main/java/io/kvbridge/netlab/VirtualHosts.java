package io.kvbridge.netlab;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * "Hosts" on one machine: a Linux network namespace each, every one joined by a veth pair to a
 * bridge in a "switch" namespace of its own, with an address from a private /24. Nothing changes in
 * the root namespace's network configuration. Each host has {@code lo} up and its end of the cable
 * as {@code eth0}; a host's cable can be cut and restored, and its traffic delayed, dropped or
 * rate-limited, at both ends, so that each direction sees the fault. Delay and loss come from
 * {@code tc netem} where the kernel has it, and otherwise from a frame relay in user space that
 * takes the cable's place on the bridge ({@link #impair}).
 *
 * <p>Namespace names are {@code <prefix>-<pid>-<n>-<host>} ({@code n} counts the sets this JVM made),
 * so parallel runs never collide; {@link #create} first removes every namespace of the prefix whose
 * JVM is gone, the leftovers of a killed run. {@link #close} kills whatever still runs in the
 * namespaces and deletes them; a shutdown hook does the same when the JVM exits without closing.
 * Needs root (or {@code CAP_SYS_ADMIN} and {@code CAP_NET_ADMIN}) and {@code ip} from iproute2;
 * {@link #unavailability()} says why they cannot be used here, and {@link #impairmentUnavailability()}
 * why delay and loss cannot.
 */
public final class VirtualHosts implements AutoCloseable
{
    /** The interface name of a host's end of its cable. */
    public static final String INTERFACE = "eth0";

    private static final String IP = "ip";
    private static final String TC = "tc";
    private static final String SWITCH = "switch";
    private static final String BRIDGE = "br0";
    private static final Pattern HOST_NAME = Pattern.compile("[a-z][a-z0-9]{0,15}");
    private static final Pattern PREFIX = Pattern.compile("[a-z][a-z0-9]{0,11}");
    private static final Pattern ADDRESS_OCTET = Pattern.compile("10\\.77\\.(\\d+)\\.");
    private static final AtomicInteger SETS = new AtomicInteger();
    private static volatile Optional<String> netemUnavailability;
    private static volatile Optional<String> relayUnavailability;

    private final String prefix;
    private final String switchNamespace;
    private final String subnet;
    private final Map<String, Host> hosts = new LinkedHashMap<>();
    private final List<String> namespaces = new ArrayList<>();
    private final Map<String, FrameRelay> relays = new LinkedHashMap<>();
    private final Thread cleanup = new Thread(this::removeAll, "virtual-hosts-cleanup");
    private boolean closed;

    /**
     * One host.
     *
     * @param name its name in the set, such as {@code decode}.
     * @param namespace the network namespace.
     * @param address its IPv4 address on {@link #INTERFACE}.
     * @param switchPort the switch's end of its cable, in the switch namespace.
     */
    public record Host(String name, String namespace, String address, String switchPort)
    {
        /** Checks the values. */
        public Host
        {
            requireNonNull(name, "name is null");
            requireNonNull(namespace, "namespace is null");
            requireNonNull(address, "address is null");
            requireNonNull(switchPort, "switchPort is null");
        }

        /** {@return the command prefix that runs a command in this host: {@code ip netns exec NAMESPACE}} */
        public List<String> launcher()
        {
            return List.of(IP, "netns", "exec", namespace);
        }
    }

    private VirtualHosts(String prefix, String subnet)
    {
        this.prefix = prefix;
        this.subnet = subnet;
        this.switchNamespace = prefix + "-" + ProcessHandle.current().pid() + "-" + SETS.incrementAndGet() + "-" + SWITCH;
    }

    /**
     * Creates the hosts, their cables and the switch.
     *
     * @param prefix the namespaces' prefix: a lower-case letter, then up to 11 letters or digits.
     * @param names the hosts' names: a lower-case letter, then up to 15 letters or digits; at most 200.
     * @return the running set; close it.
     * @throws HostCommandException when an {@code ip} command fails; what was made is removed again.
     */
    public static VirtualHosts create(String prefix, List<String> names)
    {
        requireNonNull(prefix, "prefix is null");
        if (!PREFIX.matcher(prefix).matches()) {
            throw new IllegalArgumentException("prefix=" + prefix + " is not a lower-case letter followed by up to 11 lower-case letters or digits");
        }
        if (names.isEmpty() || names.size() > 200 || new HashSet<>(names).size() != names.size()
                || !names.stream().allMatch(name -> HOST_NAME.matcher(name).matches() && !name.equals(SWITCH))) {
            throw new IllegalArgumentException("names=" + names + " must be 1 to 200 distinct lower-case names (a letter, then up to 15 letters or digits; not '"
                    + SWITCH + "')");
        }
        removeLeftovers(prefix);
        VirtualHosts set = new VirtualHosts(prefix, "10.77." + freeSubnetOctet(prefix) + ".");
        Runtime.getRuntime().addShutdownHook(set.cleanup);
        try {
            set.build(names);
        }
        catch (RuntimeException e) {
            set.close();
            throw e;
        }
        return set;
    }

    private void build(List<String> names)
    {
        addNamespace(switchNamespace);
        inSwitch(IP, "link", "add", BRIDGE, "type", "bridge");
        inSwitch(IP, "link", "set", BRIDGE, "up");
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            Host host = new Host(name, switchNamespace.substring(0, switchNamespace.length() - SWITCH.length()) + name, subnet + (i + 1), "port" + i);
            addNamespace(host.namespace());
            // made in the switch, its other end moved straight into the host: the root namespace never holds either
            inSwitch(IP, "link", "add", host.switchPort(), "type", "veth", "peer", "name", INTERFACE, "netns", host.namespace());
            inSwitch(IP, "link", "set", host.switchPort(), "master", BRIDGE, "up");
            exec(host, IP, "addr", "add", host.address() + "/24", "dev", INTERFACE);
            exec(host, IP, "link", "set", INTERFACE, "up");
            exec(host, IP, "link", "set", "lo", "up");
            hosts.put(name, host);
        }
    }

    private void addNamespace(String namespace)
    {
        HostCommands.run(IP, "netns", "add", namespace);
        namespaces.add(namespace);
    }

    /** {@return the hosts, in the order they were named} */
    public List<Host> hosts()
    {
        return List.copyOf(hosts.values());
    }

    /**
     * @param name a host's name.
     * @return the host.
     * @throws IllegalArgumentException when there is no such host.
     */
    public Host host(String name)
    {
        Host host = hosts.get(name);
        if (host == null) {
            throw new IllegalArgumentException("no host " + name + " among " + hosts.keySet());
        }
        return host;
    }

    /** {@return the hosts' /24, such as {@code 10.77.12.0/24}} */
    public String subnet()
    {
        return subnet + "0/24";
    }

    /**
     * Runs a short command in a host, within {@link HostCommands#DEFAULT_DEADLINE}.
     *
     * @param host the host.
     * @param command the command line.
     * @return what it wrote to stdout.
     * @throws HostCommandException when it fails.
     */
    public String exec(Host host, String... command)
    {
        List<String> line = new ArrayList<>(host.launcher());
        line.addAll(List.of(command));
        return HostCommands.run(HostCommands.DEFAULT_DEADLINE, line);
    }

    /**
     * Cuts a host's cable at the switch: the host keeps its address and sockets, but no packet passes
     * either way, as when a cable is pulled.
     *
     * @param host the host.
     */
    public void cut(Host host)
    {
        inSwitch(IP, "link", "set", host.switchPort(), "down");
    }

    /**
     * Plugs a cut cable back in.
     *
     * @param host the host.
     */
    public void restore(Host host)
    {
        inSwitch(IP, "link", "set", host.switchPort(), "up");
    }

    /**
     * Delays and drops the host's packets both ways, replacing any earlier impairment: with
     * {@code tc qdisc ... netem delay Xms loss Y%} at both ends of its cable where the kernel has
     * netem, and otherwise with a frame relay in user space ({@code frame_relay.c}, compiled with
     * {@code gcc}): the switch's end of the cable leaves the bridge, a TAP device takes its place,
     * and the relay passes each frame between the two after the delay, unless it drops it.
     * {@link #relayCounters} then says what it did. Either way a frame is one packet or one large
     * TCP segment (GSO), which is lost whole.
     *
     * @param host the host.
     * @param delayMillis added one-way delay of each direction, 0 to 60,000.
     * @param lossPercent share of packets dropped in each direction, 0 to 100.
     * @throws HostCommandException when a {@code tc} or {@code ip} command fails, or the relay cannot
     *     be compiled or started ({@link #impairmentUnavailability()} says so beforehand).
     */
    public void impair(Host host, int delayMillis, double lossPercent)
    {
        checkImpairment(delayMillis, lossPercent);
        if (netemUnavailability().isPresent()) {
            impairByRelay(host, delayMillis, lossPercent);
            return;
        }
        stopRelay(host);
        String loss = String.format(Locale.ROOT, "%.3f%%", lossPercent);
        shape(host, "netem", "delay", delayMillis + "ms", "loss", loss);
    }

    /** {@link #impair} through the frame relay even where the kernel has netem, so that it can be measured anywhere. */
    void impairByRelay(Host host, int delayMillis, double lossPercent)
    {
        checkImpairment(delayMillis, lossPercent);
        clearImpairment(host);
        String tap = tap(host);
        FrameRelay relay = FrameRelay.start(List.of(IP, "netns", "exec", switchNamespace), host.switchPort(), tap, delayMillis, lossPercent);
        relays.put(host.name(), relay);
        try {
            // off the bridge first: with both on it, the relay would loop the bridge's frames back into it
            inSwitch(IP, "link", "set", host.switchPort(), "nomaster");
            inSwitch(IP, "link", "set", tap, "master", BRIDGE, "up");
        }
        catch (RuntimeException e) {
            try {
                stopRelay(host);
            }
            catch (RuntimeException again) {
                e.addSuppressed(again);
            }
            throw e;
        }
    }

    private static void checkImpairment(int delayMillis, double lossPercent)
    {
        if (delayMillis < 0 || delayMillis > 60_000 || !(lossPercent >= 0 && lossPercent <= 100)) {
            throw new IllegalArgumentException("delayMillis=" + delayMillis + " must be in [0, 60000] and lossPercent=" + lossPercent + " in [0, 100]");
        }
    }

    private static String tap(Host host)
    {
        return "tap" + host.switchPort().substring("port".length());
    }

    /**
     * What the frame relay of a host's cable counted until now.
     *
     * @param host the host.
     * @return the counters, or empty when no relay runs for it (not impaired, or impaired by netem).
     * @throws HostCommandException when the relay ended on its own or does not answer within 5 s.
     */
    public Optional<RelayCounters> relayCounters(Host host)
    {
        FrameRelay relay = relays.get(host.name());
        return relay == null ? Optional.empty() : Optional.of(relay.counters());
    }

    /**
     * Limits the host's bandwidth both ways to {@code rate} with a token bucket ({@code tc qdisc ...
     * tbf}), replacing any earlier impairment; for kernels without netem, this slows transfers too.
     *
     * @param host the host.
     * @param megabitsPerSecond the rate, at least 1.
     */
    public void limitRate(Host host, int megabitsPerSecond)
    {
        if (megabitsPerSecond < 1) {
            throw new IllegalArgumentException("megabitsPerSecond=" + megabitsPerSecond + " is below 1");
        }
        stopRelay(host);
        shape(host, "tbf", "rate", megabitsPerSecond + "mbit", "burst", "64kb", "latency", "400ms");
    }

    private void shape(Host host, String... qdisc)
    {
        List<String> atHost = new ArrayList<>(List.of(TC, "qdisc", "replace", "dev", INTERFACE, "root"));
        atHost.addAll(List.of(qdisc));
        exec(host, atHost.toArray(String[]::new));
        List<String> atSwitch = new ArrayList<>(List.of(TC, "qdisc", "replace", "dev", host.switchPort(), "root"));
        atSwitch.addAll(List.of(qdisc));
        inSwitch(atSwitch.toArray(String[]::new));
    }

    /**
     * Removes a host's delay, loss or rate limit; a host without one is left as it is. A frame
     * relay is stopped, its TAP device removed and the cable put back on the bridge.
     *
     * @param host the host.
     */
    public void clearImpairment(Host host)
    {
        stopRelay(host);
        if (!exec(host, TC, "qdisc", "show", "dev", INTERFACE, "root").contains("qdisc noqueue")) {
            exec(host, TC, "qdisc", "del", "dev", INTERFACE, "root");
        }
        if (!inSwitch(TC, "qdisc", "show", "dev", host.switchPort(), "root").contains("qdisc noqueue")) {
            inSwitch(TC, "qdisc", "del", "dev", host.switchPort(), "root");
        }
    }

    private void stopRelay(Host host)
    {
        FrameRelay relay = relays.remove(host.name());
        if (relay == null) {
            return;
        }
        relay.close();
        // the TAP goes with the relay's file descriptor; one still there would loop frames once the cable is back
        if (inSwitch(IP, "-o", "link", "show").contains(" " + tap(host) + ":")) {
            inSwitch(IP, "link", "delete", tap(host));
        }
        inSwitch(IP, "link", "set", host.switchPort(), "master", BRIDGE, "up");
    }

    /** {@return the switch's namespace, which holds the bridge and the switch's end of every cable} */
    public String switchNamespace()
    {
        return switchNamespace;
    }

    private String inSwitch(String... command)
    {
        List<String> line = new ArrayList<>(List.of(IP, "netns", "exec", switchNamespace));
        line.addAll(List.of(command));
        return HostCommands.run(HostCommands.DEFAULT_DEADLINE, line);
    }

    /** Kills what still runs in the hosts and removes every namespace; cables and the bridge go with them. */
    @Override
    public synchronized void close()
    {
        if (closed) {
            return;
        }
        closed = true;
        try {
            Runtime.getRuntime().removeShutdownHook(cleanup);
        }
        catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs, or already ran, removeAll
        }
        for (String name : List.copyOf(relays.keySet())) {
            try {
                clearImpairment(hosts.get(name));
            }
            catch (HostCommandException e) {
                // the namespaces go next, and every relay, TAP and cable with them
            }
        }
        removeAll();
    }

    private synchronized void removeAll()
    {
        // in reverse, so that the switch goes last and a host's cable never dangles in a switch that is gone
        for (String namespace : namespaces.reversed()) {
            remove(namespace);
        }
        namespaces.clear();
    }

    /**
     * Removes every namespace {@code <prefix>-<pid>-...} whose JVM ({@code pid}) no longer runs:
     * what a killed run left behind, frame relays and TAP devices included (they live in the
     * switch's namespace), and the relay binaries such JVMs compiled. Namespaces of live JVMs are
     * left alone; calling it again does nothing.
     *
     * @param prefix the prefix {@link #create} was given.
     * @return the namespaces removed.
     */
    public static List<String> removeLeftovers(String prefix)
    {
        FrameRelay.removeLeftoverDirectories();
        Pattern ours = Pattern.compile(Pattern.quote(prefix) + "-(\\d+)-\\d+-[a-z0-9]+");
        List<String> removed = new ArrayList<>();
        for (String namespace : listNamespaces()) {
            Matcher matcher = ours.matcher(namespace);
            if (matcher.matches() && !ProcessHandle.of(Long.parseLong(matcher.group(1))).map(ProcessHandle::isAlive).orElse(false)) {
                remove(namespace);
                removed.add(namespace);
            }
        }
        return removed;
    }

    private static void remove(String namespace)
    {
        // a process still in it would keep the namespace, and its addresses, alive after the delete
        try {
            for (String pid : HostCommands.run(IP, "netns", "pids", namespace).strip().split("\\s+")) {
                if (!pid.isEmpty()) {
                    ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroyForcibly);
                }
            }
        }
        catch (HostCommandException e) {
            // gone already: nothing runs in it
        }
        try {
            HostCommands.run(IP, "netns", "delete", namespace);
        }
        catch (HostCommandException e) {
            if (listNamespaces().contains(namespace)) {
                throw e;
            }
        }
    }

    private static List<String> listNamespaces()
    {
        // `ip netns list` prints "name (id: n)"; the names are the files ip keeps under /run/netns
        List<String> names = new ArrayList<>();
        for (String line : HostCommands.run(IP, "netns", "list").split("\n")) {
            if (!line.isBlank()) {
                names.add(line.strip().split("\\s+")[0]);
            }
        }
        return names;
    }

    /** The third octet of 10.77.x.0/24: the first, from one the pid picks, that no live set of the prefix holds. */
    private static int freeSubnetOctet(String prefix)
    {
        Set<Integer> taken = new HashSet<>();
        for (String namespace : listNamespaces()) {
            if (namespace.startsWith(prefix + "-") && !namespace.endsWith("-" + SWITCH)) {
                try {
                    Matcher matcher = ADDRESS_OCTET.matcher(HostCommands.run(IP, "-n", namespace, "-o", "-4", "addr", "show"));
                    while (matcher.find()) {
                        taken.add(Integer.parseInt(matcher.group(1)));
                    }
                }
                catch (HostCommandException e) {
                    // removed meanwhile
                }
            }
        }
        int start = (int) (ProcessHandle.current().pid() % 250) + SETS.get();
        for (int i = 0; i < 250; i++) {
            int octet = 1 + (start + i) % 250;
            if (!taken.contains(octet)) {
                return octet;
            }
        }
        throw new IllegalStateException("every 10.77.x.0/24 is held by a live set of " + prefix + " namespaces");
    }

    /**
     * Why namespaces cannot be used here, or empty when they can: not root, {@code ip} missing, or
     * {@code ip netns add} or a veth pair refused. It makes and removes a probe namespace.
     *
     * @return the reason, naming what failed.
     */
    public static Optional<String> unavailability()
    {
        try {
            String status = Files.readString(Path.of("/proc/self/status"));
            Matcher uid = Pattern.compile("(?m)^Uid:\\s+\\d+\\s+(\\d+)").matcher(status);
            if (uid.find() && !uid.group(1).equals("0")) {
                return Optional.of("network namespaces need root (effective uid " + uid.group(1) + ")");
            }
        }
        catch (IOException e) {
            return Optional.of("cannot read /proc/self/status: " + e.getMessage());
        }
        String probe = "kvbprobe-" + ProcessHandle.current().pid() + "-" + SETS.incrementAndGet();
        try {
            HostCommands.run(IP, "netns", "add", probe);
            HostCommands.run(IP, "netns", "exec", probe, IP, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1");
            return Optional.empty();
        }
        catch (HostCommandException e) {
            return Optional.of("network namespaces with veth pairs cannot be made here: " + e.getMessage());
        }
        finally {
            try {
                remove(probe);
            }
            catch (HostCommandException e) {
                // never made
            }
        }
    }

    /**
     * Why {@code tc netem} cannot work here, or empty when it can: some VM kernels lack the netem
     * qdisc, and {@link #impair} then relays frames in user space instead. Probed once per JVM;
     * call it only where {@link #unavailability()} is empty.
     *
     * @return the reason.
     */
    public static Optional<String> netemUnavailability()
    {
        Optional<String> reason = netemUnavailability;
        if (reason == null) {
            reason = probe(probe -> HostCommands.run(IP, "netns", "exec", probe, TC, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"),
                    "tc netem is not available here: ");
            netemUnavailability = reason;
        }
        return reason;
    }

    /**
     * Why {@link #impair} cannot work here, or empty when it can: neither has the kernel netem nor
     * can the frame relay run (not root, no {@code /dev/net/tun}, no {@code gcc}, or the relay
     * refused by the kernel). Probed once per JVM by running the relay on a probe namespace's
     * cable; call it only where {@link #unavailability()} is empty.
     *
     * @return the reason, naming what failed and how to fix it.
     */
    public static Optional<String> impairmentUnavailability()
    {
        Optional<String> netem = netemUnavailability();
        if (netem.isEmpty()) {
            return netem;
        }
        return relayUnavailability().map(relay -> netem.orElseThrow() + "; and the frame relay that replaces it cannot run: " + relay);
    }

    /** Why the frame relay cannot run here, or empty when it can; probed once per JVM. */
    static Optional<String> relayUnavailability()
    {
        Optional<String> reason = relayUnavailability;
        if (reason == null) {
            reason = probeRelay();
            relayUnavailability = reason;
        }
        return reason;
    }

    private static Optional<String> probeRelay()
    {
        Optional<String> namespaces = unavailability();
        if (namespaces.isPresent()) {
            return namespaces;
        }
        if (!Files.exists(Path.of("/dev/net/tun"))) {
            return Optional.of("/dev/net/tun is missing (load the tun module: modprobe tun)");
        }
        return probe(FrameRelay::probe, "");
    }

    /** Runs a check in a namespace made for it and removed after; the reason is the prefix and the failure. */
    private static Optional<String> probe(Consumer<String> check, String prefix)
    {
        String probe = "kvbprobe-" + ProcessHandle.current().pid() + "-" + SETS.incrementAndGet();
        try {
            HostCommands.run(IP, "netns", "add", probe);
            check.accept(probe);
            return Optional.empty();
        }
        catch (HostCommandException | IllegalStateException | UncheckedIOException e) {
            return Optional.of(prefix + e.getMessage());
        }
        finally {
            try {
                remove(probe);
            }
            catch (HostCommandException e) {
                // never made
            }
        }
    }
}
