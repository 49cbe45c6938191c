package io.kvbridge.examples.demo;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.api.BlockIds;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The lines the demo's scheduler and its worker processes exchange over the worker's stdin and
 * stdout: one JSON object per line. The first line to a worker is its {@link HostSpec}; then commands
 * ({@code op}: {@code prefill}, {@code receive}, {@code audit}, {@code exit}) go in and events
 * ({@code ev}: {@code ready}, {@code params}, {@code freed}, {@code checked}, {@code audit},
 * {@code error}) come out.
 */
final class WorkerProtocol
{
    static final ObjectMapper JSON = new ObjectMapper();

    private WorkerProtocol()
    {
    }

    static String line(ObjectNode message)
    {
        try {
            return JSON.writeValueAsString(message);
        }
        catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write " + message, e);
        }
    }

    static JsonNode parse(String line)
    {
        try {
            return JSON.readTree(line);
        }
        catch (JsonProcessingException e) {
            throw new DemoFailure("unreadable line from a demo process: " + line + " (" + e.getOriginalMessage() + ")");
        }
    }

    static ObjectNode message(String kind, String name)
    {
        return JSON.createObjectNode().put(kind, name);
    }

    static ArrayNode blockIds(int[][] ids)
    {
        ArrayNode groups = JSON.createArrayNode();
        for (int[] group : ids) {
            ArrayNode blocks = groups.addArray();
            for (int block : group) {
                blocks.add(block);
            }
        }
        return groups;
    }

    static int[][] blockIds(JsonNode groups)
    {
        int[][] ids = new int[groups.size()][];
        for (int g = 0; g < ids.length; g++) {
            JsonNode blocks = groups.get(g);
            ids[g] = new int[blocks.size()];
            for (int j = 0; j < ids[g].length; j++) {
                ids[g][j] = blocks.get(j).intValue();
            }
        }
        return ids;
    }

    static ObjectNode params(TransferParams params)
    {
        ObjectNode node = JSON.createObjectNode();
        node.put("engineId", params.engineId());
        node.put("requestId", params.requestId());
        ArrayNode channels = node.putArray("sideChannels");
        for (SideChannelAddress address : params.sideChannels()) {
            channels.addObject().put("host", address.host()).put("port", address.port());
        }
        node.put("tpSize", params.tpSize());
        node.put("ppSize", params.ppSize());
        int[][] ids = new int[params.blockIds().groupCount()][];
        for (int g = 0; g < ids.length; g++) {
            ids[g] = params.blockIds().group(g);
        }
        node.set("blockIds", blockIds(ids));
        ArrayNode modes = node.putArray("modes");
        params.modes().forEach(mode -> modes.add(mode.name()));
        node.put("leaseMillis", params.leaseMillis());
        return node;
    }

    static TransferParams params(JsonNode node)
    {
        List<SideChannelAddress> channels = new ArrayList<>();
        for (JsonNode address : node.get("sideChannels")) {
            channels.add(new SideChannelAddress(address.get("host").asText(), address.get("port").intValue()));
        }
        Set<TransferMode> modes = EnumSet.noneOf(TransferMode.class);
        for (JsonNode mode : node.get("modes")) {
            modes.add(TransferMode.valueOf(mode.asText()));
        }
        return new TransferParams(node.get("engineId").asText(), node.get("requestId").asText(), channels, node.get("tpSize").intValue(),
                node.get("ppSize").intValue(), BlockIds.of(blockIds(node.get("blockIds"))), modes, node.get("leaseMillis").longValue());
    }
}
