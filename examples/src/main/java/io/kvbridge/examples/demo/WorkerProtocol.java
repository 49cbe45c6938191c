package io.kvbridge.examples.demo;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.json.TransferParamsJson;

/**
 * The lines the demo's scheduler and its worker processes exchange over the worker's stdin and
 * stdout: one JSON object per line. The first line to a worker is its {@link HostSpec}; then commands
 * ({@code op}: {@code prefill}, {@code receive}, {@code layers}, {@code sentinel}, {@code audit},
 * {@code exit}) go in and events ({@code ev}: {@code ready}, {@code params}, {@code freed},
 * {@code checked}, {@code layers}, {@code sentinel}, {@code audit}, {@code error}) come out.
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

    /** The parameters in the form a router carries, so that the demo's processes hand them over as engines would. */
    static JsonNode params(TransferParams params)
    {
        return JSON.valueToTree(TransferParamsJson.toMap(params));
    }

    static TransferParams params(JsonNode node)
    {
        return TransferParamsJson.read(node.toString());
    }
}
