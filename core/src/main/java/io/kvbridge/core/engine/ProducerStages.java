package io.kvbridge.core.engine;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.PullKey;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferParams;
import java.util.Collections;
import java.util.List;

/**
 * What a producer rank's parameters say about every pipeline stage of its engine: the side channel
 * serving the stage, and, for the stages this process's side channel serves, its epoch and the
 * request's pull key. Another process's stages are named with an unknown epoch and no key, which
 * that process's own parameters carry (a router merges them). Immutable.
 */
final class ProducerStages
{
    private final List<SideChannelAddress> addresses;
    private final List<Long> epochs;
    // true for the stages this process's side channel serves: their pull keys are this rank's
    private final boolean[] own;

    ProducerStages(ConnectorSettings settings, SideChannelAddress ownAddress, long epoch)
    {
        int ppSize = settings.geometry().rank().ppSize();
        this.addresses = settings.stageSideChannels().isEmpty() ? Collections.nCopies(ppSize, ownAddress) : settings.stageSideChannels();
        Long[] stageEpochs = new Long[addresses.size()];
        this.own = new boolean[stageEpochs.length];
        for (int stage = 0; stage < stageEpochs.length; stage++) {
            own[stage] = addresses.get(stage).equals(addresses.get(settings.geometry().rank().ppRank()));
            stageEpochs[stage] = own[stage] ? epoch : TransferParams.UNKNOWN_EPOCH;
        }
        this.epochs = List.of(stageEpochs);
    }

    List<SideChannelAddress> addresses()
    {
        return addresses;
    }

    List<Long> epochs()
    {
        return epochs;
    }

    /** {@return a request's pull key for every stage: this rank's key where this process serves the stage, none elsewhere} */
    List<PullKey> pullKeys(PullKey key)
    {
        PullKey[] keys = new PullKey[own.length];
        for (int stage = 0; stage < keys.length; stage++) {
            keys[stage] = own[stage] ? key : PullKey.NONE;
        }
        return List.of(keys);
    }
}
