package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.SideChannelAddress;
import java.util.List;

/**
 * What one demo host runs: which engine, which of its pipeline stages, and how its side channel is
 * reached. Sent as JSON to a worker process, so it holds only plain values.
 *
 * @param role {@link #PREFILL} or {@link #DECODE}.
 * @param options the demo's options.
 * @param capacity blocks per region.
 * @param stages the engine's pipeline stages this host runs.
 * @param stageSideChannels prefill only: the side channel of every stage when stages run in processes
 *     of their own (this host binds its own stage's), empty when one host runs every stage.
 * @param sideChannelSecret the secret every engine of the run authenticates its side channel with;
 *     it reaches a worker through its stdin, never its command line.
 * @param bindHost the address the host's side channels and transport bind to, that of its network
 *     namespace's interface with {@code demo --hosts}; empty for loopback.
 */
public record HostSpec(String role, DemoOptions options, int capacity, List<Integer> stages, List<SideChannelAddress> stageSideChannels,
        byte[] sideChannelSecret, String bindHost)
{
    /** The producer engine. */
    public static final String PREFILL = "prefill";
    /** The decoder engine. */
    public static final String DECODE = "decode";

    /** Validates and copies. */
    public HostSpec
    {
        requireNonNull(role, "role is null");
        requireNonNull(options, "options is null");
        stages = List.copyOf(stages);
        stageSideChannels = List.copyOf(stageSideChannels);
        sideChannelSecret = sideChannelSecret.clone();
        requireNonNull(bindHost, "bindHost is null");
        if (!role.equals(PREFILL) && !role.equals(DECODE)) {
            throw new IllegalArgumentException("role=" + role + " is not " + PREFILL + " or " + DECODE);
        }
        if (stages.isEmpty() || stages.stream().anyMatch(stage -> stage < 0 || stage >= (role.equals(PREFILL) ? options.producerPp() : options.consumerPp()))) {
            throw new IllegalArgumentException("stages=" + stages + " are not stages of the " + role + " engine");
        }
    }

    /** A host on loopback. */
    public HostSpec(String role, DemoOptions options, int capacity, List<Integer> stages, List<SideChannelAddress> stageSideChannels,
            byte[] sideChannelSecret)
    {
        this(role, options, capacity, stages, stageSideChannels, sideChannelSecret, "");
    }

    /** @return the address to bind to: {@link #bindHost}, or loopback when it is empty. */
    public String bindAddress()
    {
        return bindHost.isEmpty() ? "127.0.0.1" : bindHost;
    }

    /** @return a copy of the secret. */
    @Override
    public byte[] sideChannelSecret()
    {
        return sideChannelSecret.clone();
    }

    /** @return whether this host runs producer ranks. */
    public boolean prefill()
    {
        return role.equals(PREFILL);
    }

    /** @return the engine's pipeline stages. */
    public int ppSize()
    {
        return prefill() ? options.producerPp() : options.consumerPp();
    }

    /** @return the engine's tensor-parallel ranks per stage. */
    public int tpSize()
    {
        return prefill() ? options.producerTp() : options.consumerTp();
    }

    /** @return the ranks this host runs. */
    public int ranks()
    {
        return stages.size() * tpSize();
    }

    /** @return the engine id, the same on every host of the engine. */
    public String engineId()
    {
        return "demo-" + role;
    }

    /** @return a name for messages, such as {@code prefill stage 1}. */
    public String label()
    {
        return stages.size() == ppSize() ? role + " engine" : role + " stage" + (stages.size() == 1 ? " " : "s ") + stages;
    }
}
