package io.kvbridge.examples.demo;

import static java.util.Objects.requireNonNull;

import io.kvbridge.api.SideChannelAddress;
import java.util.List;
import java.util.regex.Pattern;

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
 * @param engineId the engine's id, the same on every host of the engine; two engines of a run (two
 *     decoders, say) need ids of their own, or their entries in a directory and their names at a
 *     producer would collide.
 */
public record HostSpec(String role, DemoOptions options, int capacity, List<Integer> stages, List<SideChannelAddress> stageSideChannels,
        byte[] sideChannelSecret, String bindHost, String engineId)
{
    /** The producer engine. */
    public static final String PREFILL = "prefill";
    /** The decoder engine. */
    public static final String DECODE = "decode";
    private static final Pattern ENGINE_ID = Pattern.compile("[a-z0-9-]{1,64}");

    /** Validates and copies. */
    public HostSpec
    {
        requireNonNull(role, "role is null");
        requireNonNull(options, "options is null");
        stages = List.copyOf(stages);
        stageSideChannels = List.copyOf(stageSideChannels);
        sideChannelSecret = sideChannelSecret.clone();
        requireNonNull(bindHost, "bindHost is null");
        requireNonNull(engineId, "engineId is null");
        if (!ENGINE_ID.matcher(engineId).matches()) {
            throw new IllegalArgumentException("engineId=" + engineId + " is not 1 to 64 lower-case letters, digits or dashes");
        }
        if (!role.equals(PREFILL) && !role.equals(DECODE)) {
            throw new IllegalArgumentException("role=" + role + " is not " + PREFILL + " or " + DECODE);
        }
        if (stages.isEmpty() || stages.stream().anyMatch(stage -> stage < 0 || stage >= (role.equals(PREFILL) ? options.producerPp() : options.consumerPp()))) {
            throw new IllegalArgumentException("stages=" + stages + " are not stages of the " + role + " engine");
        }
    }

    /** A host of the run's only engine of its role, {@link #defaultEngineId(String) demo-ROLE}. */
    public HostSpec(String role, DemoOptions options, int capacity, List<Integer> stages, List<SideChannelAddress> stageSideChannels,
            byte[] sideChannelSecret, String bindHost)
    {
        this(role, options, capacity, stages, stageSideChannels, sideChannelSecret, bindHost, defaultEngineId(role));
    }

    /** A host on loopback of the run's only engine of its role. */
    public HostSpec(String role, DemoOptions options, int capacity, List<Integer> stages, List<SideChannelAddress> stageSideChannels,
            byte[] sideChannelSecret)
    {
        this(role, options, capacity, stages, stageSideChannels, sideChannelSecret, "");
    }

    /**
     * @param role {@link #PREFILL} or {@link #DECODE}.
     * @return the id of the run's only engine of that role: {@code demo-ROLE}.
     */
    public static String defaultEngineId(String role)
    {
        return "demo-" + role;
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

    /** @return a name for messages, such as {@code prefill stage 1}, or {@code demo-decode2 engine} for an engine of a non-default id. */
    public String label()
    {
        String engine = engineId.equals(defaultEngineId(role)) ? role : engineId;
        return stages.size() == ppSize() ? engine + " engine" : engine + " stage" + (stages.size() == 1 ? " " : "s ") + stages;
    }
}
