package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

final class StaleEpochsTest
{
    private static final InetSocketAddress PARAMETERS = new InetSocketAddress("127.0.0.1", 1);
    private static final InetSocketAddress LOCATED = new InetSocketAddress("10.77.3.2", 5600);

    @Test
    void aRestartedProducerFoundThroughTheDirectoryIsNamedWhereItAnsweredBesideTheParametersAddress()
    {
        assertEquals("producer prefill at 10.77.3.2:5600 (found through the directory; the parameters name 127.0.0.1:1) restarted: the transfer"
                + " parameters name epoch 0000000000000001, its side channel now answers with epoch 0000000000000002; nothing was transferred:"
                + " prefill the request again", StaleEpochs.producerRestarted("prefill", PARAMETERS, LOCATED, 1, 2));
    }

    @Test
    void aRestartedProducerThatAnsweredAtTheParametersAddressIsNamedThereOnly()
    {
        assertEquals("producer prefill at 10.77.3.2:5600 restarted: the transfer parameters name epoch 0000000000000001, its side channel now"
                + " answers with epoch 0000000000000002; nothing was transferred: prefill the request again",
                StaleEpochs.producerRestarted("prefill", LOCATED, LOCATED, 1, 2));
    }
}
