package io.kvbridge.engine.jlama.serve;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.github.tjake.jlama.safetensors.DType;
import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.engine.jlama.JlamaEngine;
import io.kvbridge.engine.jlama.JlamaSessionPool;
import io.kvbridge.engine.jlama.JlamaStage;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayout;
import io.kvbridge.json.TransferParamsJson;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.memory.Allocation;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One engine JVM: Jlama with a pool of sessions, and the kvbridge connector its role needs. It
 * reads the router's commands on stdin and answers on stdout ({@link Lines}); a single loop runs
 * the commands and polls the connector between them, as an engine's scheduler would.
 *
 * <ul>
 *   <li>{@code prefill}: runs the prompt's forward pass into a free session slot, reports
 *       {@code prefillFinished} with the slot's blocks, answers the first token and the
 *       {@link TransferParams} as JSON, and returns the slot when kvbridge frees the request. A
 *       prefill JVM that is one of several pipeline stages computes every layer but registers and
 *       hands over only its stage's ({@link JlamaStage}); a later stage takes the slot the first one
 *       chose ({@code slot}), so that every stage's parameters name the same blocks.</li>
 *   <li>{@code decode}: refuses a session longer than its pages before any byte moves, reports
 *       {@code blocksAllocated} for a free slot (or, for a later turn of a {@code conversation}, for
 *       the blocks of the slot it kept that it does not hold yet), and answers once kvbridge received
 *       the blocks and it decoded greedily from the prompt's end without running the prompt; several
 *       sessions are received at once.</li>
 *   <li>{@code prefill} with {@code stream}: announces the request ({@code prefillStarted}) before the
 *       forward pass and sends its parameters at once in a {@code started} message, then hands over
 *       each of its stage's layers as Jlama completes it ({@link StreamedPrefill}); a {@code decode}
 *       without {@code token} starts receiving such a session, and {@code first-token} later
 *       gives it the token (or the prefill's failure) ({@link FirstTokens}).</li>
 *   <li>{@code forget}: lets go of a conversation's kept slot.</li>
 *   <li>{@code reference}: prefill and decode in this one JVM, no kvbridge: what the others must
 *       reproduce bit for bit.</li>
 * </ul>
 */
public final class JlamaServer implements AutoCloseable
{
    private static final long RECEIVE_DEADLINE_NANOS = PrefillDeadlines.receiveNanos();
    private static final long SLOT_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final Duration STAGE_LEASE = Duration.ofSeconds(120);
    /** A hand-back waits for the next turn's prefill, which may come after a long reference turn; the conversation keeps the slot anyway. */
    private static final Duration HAND_BACK_LEASE = Duration.ofSeconds(300);

    private final ServerOptions options;
    private final PrintStream out;
    private final JlamaEngine engine;
    private final JlamaSessionPool pool;
    private final KvBridge bridge;
    private final ProducerConnector producer;
    private final ConsumerConnector consumer;
    private final JlamaStage stage;
    private final CacheGeometry geometry;
    private final StreamedPrefill streamed;
    private final FirstTokens firstTokens = new FirstTokens();
    private final PartialArrivals partialArrivals;
    private final Map<String, Integer> heldSlots = new HashMap<>();
    private final Map<String, Receiving> receiving = new LinkedHashMap<>();
    private final HandBackSource handBackSource;
    private final HandBackTarget handBackTarget;
    private int freed;

    private JlamaServer(ServerOptions options, PrintStream out)
    {
        this.options = options;
        this.out = out;
        this.engine = JlamaEngine.load(options.modelDirectory(), options.workDirectory(), DType.F32);
        this.pool = new JlamaSessionPool(engine, options.modelName(), options.slots(), options.blockTokens());
        if (options.role().equals("reference")) {
            this.bridge = null;
            this.producer = null;
            this.consumer = null;
            this.stage = JlamaStage.whole(engine.model().getConfig().numberOfLayers);
            this.geometry = null;
            this.streamed = null;
            this.handBackSource = null;
            this.handBackTarget = null;
            this.partialArrivals = null;
            return;
        }
        String agent = "jlama-" + options.role() + (options.ppSize() > 1 ? "-pp" + options.ppRank() : "");
        this.bridge = KvBridge.builder().transport(options.backend()).agentName(agent).sideChannelSecret(options.secret()).build();
        // a prefill stage computes every layer but registers and hands over only its own (JlamaStage); decode and an unsplit prefill hold them all
        this.stage = new JlamaStage(options.ppRank(), options.ppSize(), engine.model().getConfig().numberOfLayers);
        ModelCacheSpec spec = pool.cacheSpec(stage);
        JlamaCacheLayout layout = (JlamaCacheLayout) bridge.layout(JlamaCacheLayout.NAME, pool.layoutOptions(stage));
        this.geometry = layout.describe(spec, pool.memory(stage), stage.rank());
        ConnectorSettings.Builder settings = ConnectorSettings.builder("jlama-" + options.role(), geometry).sideChannel("127.0.0.1", 0)
                .cacheSpec(spec).layout(layout);
        if (options.ppSize() > 1) {
            // every stage's side channel is named in the parameters, so the decoder shakes hands with each stage's JVM
            settings.sideChannel("127.0.0.1", options.stagePorts().get(options.ppRank()))
                    .stageSideChannels(options.stagePorts().stream().map(port -> new SideChannelAddress("127.0.0.1", port)).toList())
                    // the decoder hears of a request only when the slowest stage finished it: a stage's lease must outlast the others' prefill
                    .leaseDuration(STAGE_LEASE);
        }
        if (options.handBack() && options.role().equals("decode")) {
            settings.leaseDuration(HAND_BACK_LEASE);
        }
        // a streamed request is held from before its pass: every deadline must outlast the longest prefill
        PrefillDeadlines.extend(settings);
        // with the hand-back both engines run both connectors (kv_both): the decoder hands each conversation back, the prefill JVM receives it
        this.producer = options.role().equals("prefill") || options.handBack() ? bridge.producer(settings.build()) : null;
        this.consumer = options.role().equals("decode") || options.handBack() ? bridge.consumer(settings.build()) : null;
        this.handBackSource = options.role().equals("decode") ? new HandBackSource(pool, options.handBack() ? producer : null, options.corruptBlock() >= 0) : null;
        this.streamed = producer == null ? null : new StreamedPrefill(producer, stage, options.corruptBlock() >= 0 ? this::corrupt : null);
        this.handBackTarget = options.role().equals("prefill") ? new HandBackTarget(engine, pool, producer, consumer, heldSlots, streamed, this::reply) : null;
        this.partialArrivals = consumer == null ? null : new PartialArrivals(consumer, stage.modelLayers());
    }

    /**
     * Runs an engine JVM until the router says {@code exit} or closes stdin.
     *
     * @param args {@link ServerOptions} arguments.
     * @throws Exception when the engine cannot start; the router sees the JVM exit.
     */
    public static void main(String[] args) throws Exception
    {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
        // libraries that log to System.out must not interleave with protocol lines
        System.setOut(System.err);
        BlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = Thread.ofPlatform().daemon().name("jlama-commands").start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    commands.add(line);
                }
            }
            catch (IOException e) {
                System.err.println("jlama server: stdin failed: " + e);
            }
            commands.add("");
        });
        try (JlamaServer server = new JlamaServer(ServerOptions.parse(args), out)) {
            ObjectNode ready = Lines.object().put("op", "ready").put("role", server.options.role());
            ready.set("paging", Lines.JSON.valueToTree(server.pool.layoutOptions()));
            Lines.send(out, ready);
            server.loop(commands);
        }
        reader.interrupt();
        System.exit(0);
    }

    private void loop(BlockingQueue<String> commands) throws InterruptedException
    {
        while (true) {
            // sessions being received want the consumer polled often; an idle engine may wait longer
            String line = commands.poll(receiving.isEmpty() ? 1000 : 200, TimeUnit.MICROSECONDS);
            pollProducer();
            pollConsumer();
            if (line == null) {
                continue;
            }
            if (line.isEmpty()) {
                return;
            }
            ObjectNode command = Lines.parse(line);
            if (command == null) {
                continue;
            }
            String op = command.path("op").asText();
            if (op.equals("exit")) {
                return;
            }
            ObjectNode reply;
            try {
                reply = switch (op) {
                    case "prefill" -> prefill(command);
                    case "decode" -> decode(command);
                    case "generate" -> generate(command);
                    case "abort" -> abort(command);
                    case "first-token" -> firstToken(command);
                    case "forget" -> forget(command);
                    case "audit" -> audit();
                    default -> throw new KvBridgeException(ErrorCode.INVALID_ARGUMENT, "unknown op " + op);
                };
            }
            catch (KvBridgeException e) {
                reply = Lines.object().put("error", e.code().name()).put("message", e.getMessage());
            }
            catch (RuntimeException e) {
                reply = Lines.object().put("error", "INTERNAL").put("message", e.toString());
            }
            if (reply != null) {
                reply(command.path("id").asText(), reply);
            }
        }
    }

    private void pollProducer()
    {
        if (producer == null) {
            return;
        }
        for (FreedRequest request : producer.poll()) {
            Integer slot = heldSlots.remove(request.requestId());
            if (slot != null) {
                if (!handBackTarget.keeps(slot)) {
                    pool.release(slot);
                }
                freed++;
            }
            else if (handBackSource != null) {
                handBackSource.freed(request.requestId());
            }
        }
    }

    private ObjectNode prefill(ObjectNode command)
    {
        String id = command.path("id").asText();
        if (command.has("conversation")) {
            return handBackTarget.prefill(command, this::awaitFreeSlotAndAcquire);
        }
        int[] prompt = Lines.ints(command.path("prompt"));
        // a later pipeline stage takes the slot the first stage took, so that every stage's parameters name the same blocks
        int slot = command.has("slot") ? awaitSlot(command.path("slot").asInt()) : awaitFreeSlotAndAcquire();
        if (command.path("stream").asBoolean()) {
            return streamedPrefill(id, slot, prompt);
        }
        try {
            long start = System.nanoTime();
            JlamaEngine.Step first = engine.prefill(pool.buffer(slot), prompt);
            long prefillNanos = System.nanoTime() - start;
            TransferParams params = producer.prefillFinished(id, pool.blockIds(slot, prompt.length));
            heldSlots.put(id, slot);
            if (options.corruptBlock() >= 0) {
                corrupt(slot);
            }
            return Lines.object().put("token", first.token()).put("digest", Lines.digest(first.logits())).put("prefillNanos", prefillNanos)
                    .put("slot", slot).put("params", TransferParamsJson.write(params));
        }
        catch (RuntimeException e) {
            if (!heldSlots.containsKey(id)) {
                pool.release(slot);
            }
            throw e;
        }
    }

    /**
     * A streamed prefill: kvbridge holds the slot's blocks from before the forward pass, the router
     * gets the parameters at once (a {@code started} message ahead of the reply) to hand to the
     * decoder, and each of this stage's layers moves as soon as Jlama computed it.
     */
    private ObjectNode streamedPrefill(String id, int slot, int[] prompt)
    {
        long start = System.nanoTime();
        TransferParams params;
        try {
            params = producer.prefillStarted(id, pool.blockIds(slot, prompt.length));
        }
        catch (RuntimeException e) {
            pool.release(slot);
            throw e;
        }
        // kvbridge holds the blocks now: the slot returns when the producer reports the request freed
        heldSlots.put(id, slot);
        String json = TransferParamsJson.write(params);
        reply(id, Lines.object().put("op", "started").put("slot", slot).put("params", json));
        JlamaEngine.Step first;
        try {
            first = streamed.run(engine, slot, pool.buffer(slot), prompt, id);
        }
        catch (RuntimeException e) {
            producer.abort(id);
            throw e;
        }
        return Lines.object().put("token", first.token()).put("digest", Lines.digest(first.logits())).put("prefillNanos", System.nanoTime() - start)
                .put("slot", slot).put("params", json);
    }

    /** Every slot may still be held by requests the decoder finished but kvbridge has not yet reported freed: poll for them, within a deadline. */
    private int awaitFreeSlotAndAcquire()
    {
        long deadline = System.nanoTime() + SLOT_WAIT_NANOS;
        while (pool.freeSlots() == 0 && System.nanoTime() < deadline) {
            pollProducer();
            Thread.onSpinWait();
        }
        return pool.acquire();
    }

    /** Waits, within a deadline, until kvbridge frees one given slot, and takes it. */
    private int awaitSlot(int slot)
    {
        long deadline = System.nanoTime() + SLOT_WAIT_NANOS;
        while (!pool.isFree(slot) && System.nanoTime() < deadline) {
            pollProducer();
            Thread.onSpinWait();
        }
        return pool.acquire(slot);
    }

    /** The negative control: one byte of one block of layer 0's key plane changes after prefill (streamed: once layer 0 is computed), before kvbridge moves it. */
    private void corrupt(int slot)
    {
        int token = options.corruptBlock() * options.blockTokens();
        MemorySegment row = pool.buffer(slot).getKeyTensorForPosition(0, token).getMemorySegment();
        row.set(ValueLayout.JAVA_BYTE, 1, (byte) (row.get(ValueLayout.JAVA_BYTE, 1) ^ 0x10));
    }

    /**
     * Starts receiving a session: refuses it when it is longer than the pages, takes a slot and
     * tells kvbridge the blocks; the reply comes from {@link #pollConsumer} once the blocks arrived
     * and the steps ran, so that several sessions' transfers are in flight at once.
     */
    private ObjectNode decode(ObjectNode command)
    {
        String id = command.path("id").asText();
        int promptLength = command.path("promptLength").asInt();
        int steps = command.path("steps").asInt();
        // a streamed prefill's session starts receiving before its first token exists: that comes in a first-token command
        int token = command.has("token") ? command.path("token").asInt() : Receiving.UNKNOWN;
        TransferMode mode = TransferMode.valueOf(command.path("mode").asText());
        KvBridgeException.check(promptLength > 0 && steps >= 0 && promptLength + steps <= pool.maxTokens(), ErrorCode.INVALID_ARGUMENT,
                "session %s: %d prompt tokens and %d decode steps need %d positions but this decoder's Jlama pages hold %d; refused before any transfer",
                id, promptLength, steps, promptLength + steps, pool.maxTokens());
        KvBridgeException.check(!receiving.containsKey(id), ErrorCode.INVALID_ARGUMENT, "session %s is already being received", id);
        String conversation = command.hasNonNull("conversation") ? command.path("conversation").asText() : null;
        int[] prompt = conversation == null ? null : Lines.ints(command.path("prompt"));
        KvBridgeException.check(prompt == null || prompt.length == promptLength, ErrorCode.INVALID_ARGUMENT,
                "session %s: a turn of conversation %s must carry its %d prompt tokens, got %d", id, conversation, promptLength,
                prompt == null ? 0 : prompt.length);
        TransferParams params = TransferParamsJson.read(command.path("params").asText());
        if (command.path("handBack").asBoolean()) {
            handBackSource.ask(id, conversation);
        }
        HandBackSource.Conversation held = conversation == null ? null : handBackSource.take(conversation);
        int slot = held != null ? held.slot() : pool.acquire();
        int cachedTokens = held == null ? 0 : handBackSource.cachedPrefix(held.tokens(), prompt);
        try {
            long start = System.nanoTime();
            consumer.blocksAllocated(id, params, mode, pool.blockIds(slot, cachedTokens / pool.blockTokens(), promptLength));
            receiving.put(id, new Receiving(id, slot, promptLength, steps, token, start, conversation, prompt, cachedTokens));
            return null;
        }
        catch (RuntimeException e) {
            pool.release(slot);
            handBackSource.failed(id);
            throw e;
        }
    }

    /** Lets go of a conversation's slot: the router will send no further turn. */
    private ObjectNode forget(ObjectNode command)
    {
        String conversation = command.path("conversation").asText();
        return Lines.object().put("forgotten", handBackSource != null ? handBackSource.forget(conversation) : handBackTarget.forget(conversation));
    }

    /** Answers every session whose blocks arrived (by decoding it), whose transfer failed, or that waited past its deadline. */
    private void pollConsumer()
    {
        if (consumer == null) {
            return;
        }
        for (FirstTokens.Landed late : firstTokens.expired(System.nanoTime() - RECEIVE_DEADLINE_NANOS)) {
            pool.release(late.session().slot());
            reply(late.session().id(), Lines.object().put("error", ErrorCode.DEADLINE_EXCEEDED.name()).put("message", "session " + late.session().id()
                    + ": its blocks landed but no first token came within " + TimeUnit.NANOSECONDS.toSeconds(RECEIVE_DEADLINE_NANOS) + " s"));
        }
        if (receiving.isEmpty()) {
            return;
        }
        ReceiveBatch batch = consumer.poll();
        for (ReceiveFailure failure : batch.failed()) {
            Receiving session = receiving.remove(failure.requestId());
            firstTokens.forget(failure.requestId());
            if (session != null) {
                handBackSource.failed(session.id());
                pool.release(session.slot());
                reply(session.id(), Lines.object().put("error", failure.code().name()).put("message",
                        "session " + session.id() + ": the transfer failed: " + failure.message()));
            }
        }
        for (String id : batch.received()) {
            Receiving session = receiving.remove(id);
            if (session != null) {
                FirstTokens.Landed landed = new FirstTokens.Landed(session, System.nanoTime() - session.startNanos(), DisaggregatedRun.epochMicros());
                if (session.token() != Receiving.UNKNOWN) {
                    finish(landed);
                }
                else {
                    FirstTokens.Outcome outcome = firstTokens.landed(landed);
                    if (outcome != null) {
                        finish(landed, outcome);
                    }
                }
            }
        }
        long now = System.nanoTime();
        for (Receiving session : List.copyOf(receiving.values())) {
            if (now - session.startNanos() > RECEIVE_DEADLINE_NANOS) {
                receiving.remove(session.id());
                firstTokens.forget(session.id());
                handBackSource.failed(session.id());
                pool.release(session.slot());
                reply(session.id(), Lines.object().put("error", ErrorCode.DEADLINE_EXCEEDED.name()).put("message", "session " + session.id()
                        + ": no blocks received within " + TimeUnit.NANOSECONDS.toSeconds(RECEIVE_DEADLINE_NANOS) + " s"));
            }
        }
        partialArrivals.observe(receiving);
    }

    /** Answers a landed session whose first token the prefill's outcome gives, or its prefill's failure. */
    private void finish(FirstTokens.Landed landed, FirstTokens.Outcome outcome)
    {
        if (outcome.error() != null) {
            pool.release(landed.session().slot());
            reply(landed.session().id(), Lines.object().put("error", ErrorCode.TRANSFER_FAILED.name()).put("message",
                    "session " + landed.session().id() + ": its prefill failed: " + outcome.error()));
            return;
        }
        finish(new FirstTokens.Landed(landed.session().withToken(outcome.token()), landed.transferNanos(), landed.readyMicros()));
    }

    /** Decodes a landed session whose first token is known and answers it; the slot returns unless a conversation keeps it. */
    private void finish(FirstTokens.Landed landed)
    {
        Receiving session = landed.session();
        ObjectNode reply;
        boolean keep = false;
        try {
            reply = decodeSteps(session, landed.transferNanos()).put("readyMicros", landed.readyMicros());
            keep = session.conversation() != null;
            if (keep) {
                handBackSource.handBack(session.id(), session.conversation(), reply);
            }
        }
        catch (RuntimeException e) {
            reply = Lines.object().put("error", "INTERNAL").put("message", e.toString());
        }
        finally {
            if (!keep) {
                pool.release(session.slot());
            }
        }
        reply(session.id(), reply);
    }

    /**
     * The router's word on a streamed prefill: the first token ({@code token}) or its failure
     * ({@code error}), for the session named {@code session}; decodes it now if its blocks landed.
     */
    private ObjectNode firstToken(ObjectNode command)
    {
        String id = command.path("session").asText();
        FirstTokens.Outcome outcome = command.has("error") ? new FirstTokens.Outcome(Receiving.UNKNOWN, command.path("error").asText())
                : new FirstTokens.Outcome(command.path("token").asInt(), null);
        KvBridgeException.check(outcome.error() != null || outcome.token() >= 0, ErrorCode.INVALID_ARGUMENT,
                "first-token for session %s: token %d is negative", id, outcome.token());
        Receiving pending = receiving.get(id);
        KvBridgeException.check(pending == null || pending.token() == Receiving.UNKNOWN, ErrorCode.INVALID_ARGUMENT,
                "first-token for session %s, which was started with its first token", id);
        FirstTokens.Landed landed = firstTokens.said(id, outcome);
        KvBridgeException.check(landed != null || pending != null, ErrorCode.INVALID_ARGUMENT,
                "first-token for session %s, which this decoder is not receiving; send decode first", id);
        if (landed != null) {
            finish(landed, outcome);
        }
        return Lines.object();
    }

    /** Decodes greedily from the prompt's end, reading the moved K/V rows as if this JVM had computed them. */
    private ObjectNode decodeSteps(Receiving session, long transferNanos)
    {
        long forwardedBefore = engine.forwardTokens();
        ArrayNode tokens = Lines.JSON.createArrayNode();
        ArrayNode digests = Lines.JSON.createArrayNode();
        long firstStepNanos = 0;
        int token = session.token();
        for (int s = 0; s < session.steps(); s++) {
            long stepStart = System.nanoTime();
            JlamaEngine.Step step = engine.decode(pool.buffer(session.slot()), token, session.promptLength() + s);
            if (s == 0) {
                firstStepNanos = System.nanoTime() - stepStart;
            }
            token = step.token();
            tokens.add(token);
            digests.add(Lines.digest(step.logits()));
        }
        if (session.conversation() != null) {
            // the slot now holds the prompt's rows and those of every token fed since: what the next turn may reuse
            int[] held = Arrays.copyOf(session.prompt(), session.promptLength() + session.steps());
            for (int s = 0; s < session.steps(); s++) {
                held[session.promptLength() + s] = s == 0 ? session.token() : tokens.get(s - 1).asInt();
            }
            handBackSource.keep(session.conversation(), session.slot(), held);
        }
        ObjectNode reply = Lines.object().put("transferNanos", transferNanos).put("firstStepNanos", firstStepNanos)
                .put("forwardedTokens", engine.forwardTokens() - forwardedBefore).put("cachedTokens", session.cachedTokens());
        reply.set("tokens", tokens);
        reply.set("digests", digests);
        return reply;
    }

    private void reply(String id, ObjectNode reply)
    {
        reply.put("id", id);
        Lines.send(out, reply);
    }

    private ObjectNode generate(ObjectNode command)
    {
        return ReferenceGeneration.generate(engine, pool, Lines.ints(command.path("prompt")), command.path("steps").asInt());
    }

    /** The router gave up on a request (the decoder refused it): kvbridge frees its blocks, and the slot returns on the next poll. */
    private ObjectNode abort(ObjectNode command)
    {
        KvBridgeException.check(producer != null, ErrorCode.INVALID_ARGUMENT, "abort is a prefill command");
        producer.abort(command.path("id").asText());
        return Lines.object();
    }

    private ObjectNode audit()
    {
        ObjectNode reply = Lines.object().put("forwardedTokens", engine.forwardTokens()).put("forwardCalls", engine.forwardCalls())
                .put("freeSlots", pool.freeSlots()).put("freed", freed);
        ConnectorAudit audit = producer != null ? producer.audit() : consumer != null ? consumer.audit() : null;
        // a kv_both engine is idle when both its connectors are
        ConnectorAudit received = producer != null && consumer != null ? consumer.audit() : null;
        reply.put("idle", (audit == null || audit.idle()) && (received == null || received.idle()))
                .put("partlyLoadedSessions", partialArrivals == null ? 0 : partialArrivals.sessions());
        if (geometry != null) {
            // what this JVM registered with its transport, as Jlama's own accessors place the layers
            reply.put("ppRank", stage.ppRank()).put("ppSize", stage.ppSize());
            reply.set("registeredLayers", Lines.JSON.valueToTree(pool.layersIn(geometry.allocations())));
            reply.put("registeredBytes", geometry.allocations().stream().mapToLong(Allocation::bytes).sum());
        }
        reply.put("connector", audit == null ? "none" : audit + (received == null ? "" : "; " + received));
        return reply;
    }

    @Override
    public void close()
    {
        if (producer != null) {
            producer.close();
        }
        if (consumer != null) {
            consumer.close();
        }
        if (bridge != null) {
            bridge.close();
        }
        engine.close();
    }
}
