// The Java client's side of tests/schemas/test_schema_java_interop.py: PROTOBUF_NATIVE (classes
// protoc generates from sw/*.proto next to this file) and KeyValue schemas, with the official
// Java client, against the Apache Pulsar fixture. Compiled once per test session with the
// fixture's classpath; one JVM per direction:
//
//   java SchemaInterop <serviceUrl> produce   < tasks   # writes each task's values
//   java SchemaInterop <serviceUrl> consume   < tasks   # registers first, then reads
//
// stdin's first line is a JSON array of tasks {"topic", "schema": "pb" | "kv" | "auto", "key":
// "string" | "json", "value": "json" | "avro" | "pb", "encoding": "INLINE" | "SEPARATED",
// "values": [...], "expect": n}; a protobuf value is the base64 of its encoding, a KeyValue
// value {"key": ..., "value": ...} (null: a null half). "produce" sends the values and prints
// "SENT <topic>". "consume" creates each task's producer (so the Java client's schema is
// registered first) and sends its values, subscribes from the earliest message, prints
// "READY", waits for a "GO" line (the Python side has written its messages meanwhile), then
// prints each of the "expect" messages it receives as "GOT " and one line of JSON {"topic",
// "value"} (protobuf values printed with JsonFormat), and "DONE". (The client logs on stdout
// too.) An "auto" task has no values: its consumer is AUTO_CONSUME, decoding with the
// registered schema only.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.avro.generic.GenericEnumSymbol;
import org.apache.pulsar.client.api.schema.Field;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.common.schema.KeyValue;
import org.apache.pulsar.common.schema.KeyValueEncodingType;
import sw.test.Reading;

// The KeyValue halves' record types (Avro reflection gives the registry definition: record
// name = class name, no namespace in the unnamed package; boxed and object fields nullable,
// primitives not), mirrored by dataclasses of the same names in the Python test.
enum Grade {
    LOW,
    MID,
    HIGH
}

class Label {
    public String name;
    public int shard;
}

class Measure {
    public String sensor;
    public long total;
    public int count;
    public Double ratio;
    public boolean ok;
    public List<String> tags;
    public Map<String, Long> sizes;
    public Grade grade;
    public Label origin;
}

public class SchemaInterop {
    static final ObjectMapper MAPPER = new ObjectMapper();

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Schema<Object> schema(JsonNode task) {
        if (task.get("schema").asText().equals("auto")) {
            return (Schema) Schema.AUTO_CONSUME();
        }
        if (task.get("schema").asText().equals("pb")) {
            return (Schema) Schema.PROTOBUF_NATIVE(Reading.class);
        }
        Schema key = task.get("key").asText().equals("string") ? Schema.STRING : Schema.JSON(Label.class);
        String kind = task.get("value").asText();
        Schema value =
                kind.equals("json")
                        ? Schema.JSON(Measure.class)
                        : kind.equals("avro")
                                ? Schema.AVRO(Measure.class)
                                : Schema.PROTOBUF_NATIVE(Reading.class);
        KeyValueEncodingType enc = KeyValueEncodingType.valueOf(task.get("encoding").asText());
        return (Schema) Schema.KeyValue(key, value, enc);
    }

    static Object value(JsonNode task, JsonNode v) throws Exception {
        if (task.get("schema").asText().equals("pb")) {
            // null: a null value (the producer sets null_value).
            return v.isNull() ? null : Reading.parseFrom(Base64.getDecoder().decode(v.asText()));
        }
        // A JSON null is a null half.
        JsonNode k = v.get("key");
        JsonNode val = v.get("value");
        Object key =
                k.isNull()
                        ? null
                        : task.get("key").asText().equals("string")
                                ? k.asText()
                                : MAPPER.treeToValue(k, Label.class);
        Object value =
                val.isNull()
                        ? null
                        : task.get("value").asText().equals("pb")
                                ? Reading.parseFrom(Base64.getDecoder().decode(val.asText()))
                                : MAPPER.treeToValue(val, Measure.class);
        return new KeyValue<>(key, value);
    }

    /** JSON of a decoded value: messages (JsonFormat), POJOs, KeyValue, generic records. */
    static JsonNode plain(Object o) throws Exception {
        if (o instanceof MessageOrBuilder) {
            return MAPPER.readTree(JsonFormat.printer().print((MessageOrBuilder) o));
        }
        if (o instanceof KeyValue) {
            ObjectNode out = MAPPER.createObjectNode();
            out.set("key", plain(((KeyValue<?, ?>) o).getKey()));
            out.set("value", plain(((KeyValue<?, ?>) o).getValue()));
            return out;
        }
        if (o instanceof JsonNode) {
            return (JsonNode) o;
        }
        if (o instanceof GenericRecord && ((GenericRecord) o).getNativeObject() != o) {
            // AUTO_CONSUME's records, decoded with the writer's registered schema info alone:
            // a protobuf DynamicMessage, a KeyValue, an Avro record or a JSON tree (whose
            // field API would wrap arrays as empty records).
            return plain(((GenericRecord) o).getNativeObject());
        }
        if (o instanceof GenericRecord) {
            GenericRecord r = (GenericRecord) o;
            ObjectNode out = MAPPER.createObjectNode();
            for (Field f : r.getFields()) {
                out.set(f.getName(), plain(r.getField(f)));
            }
            return out;
        }
        if (o instanceof org.apache.avro.generic.GenericRecord) {
            org.apache.avro.generic.GenericRecord r = (org.apache.avro.generic.GenericRecord) o;
            ObjectNode out = MAPPER.createObjectNode();
            for (org.apache.avro.Schema.Field f : r.getSchema().getFields()) {
                out.set(f.name(), plain(r.get(f.name())));
            }
            return out;
        }
        if (o instanceof CharSequence || o instanceof Enum || o instanceof GenericEnumSymbol) {
            return MAPPER.getNodeFactory().textNode(o.toString());
        }
        if (o instanceof Map) {
            ObjectNode out = MAPPER.createObjectNode();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                out.set(e.getKey().toString(), plain(e.getValue()));
            }
            return out;
        }
        if (o instanceof Collection) {
            ArrayNode out = MAPPER.createArrayNode();
            for (Object x : (Collection<?>) o) {
                out.add(plain(x));
            }
            return out;
        }
        return MAPPER.valueToTree(o);
    }

    static void send(PulsarClient client, JsonNode task) throws Exception {
        if (task.get("values").size() == 0) {
            return;
        }
        Producer<Object> p =
                client.newProducer(schema(task))
                        .topic(task.get("topic").asText())
                        .sendTimeout(0, TimeUnit.SECONDS)
                        .create();
        List<CompletableFuture<?>> sent = new ArrayList<>();
        for (JsonNode v : task.get("values")) {
            sent.add(p.sendAsync(value(task, v)));
        }
        p.flush();
        for (CompletableFuture<?> f : sent) {
            f.get(120, TimeUnit.SECONDS);
        }
        p.close();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        JsonNode tasks = MAPPER.readTree(in.readLine());
        // Generous timeouts: the test machine is a loaded 2-core box.
        PulsarClient client =
                PulsarClient.builder()
                        .serviceUrl(args[0])
                        .operationTimeout(120, TimeUnit.SECONDS)
                        .build();
        if (args[1].equals("produce")) {
            for (JsonNode task : tasks) {
                send(client, task);
                System.out.println("SENT " + task.get("topic").asText());
            }
        } else {
            List<Consumer<Object>> consumers = new ArrayList<>();
            for (JsonNode task : tasks) {
                send(client, task);
                consumers.add(
                        client.newConsumer(schema(task))
                                .topic(task.get("topic").asText())
                                .subscriptionName("java")
                                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                                .subscribe());
            }
            System.out.println("READY");
            System.out.flush();
            String go = in.readLine();
            if (!"GO".equals(go)) {
                throw new IllegalStateException("expected GO, got " + go);
            }
            for (int i = 0; i < tasks.size(); i++) {
                JsonNode task = tasks.get(i);
                Consumer<Object> c = consumers.get(i);
                for (int n = 0; n < task.get("expect").asInt(); n++) {
                    Message<Object> m = c.receive(120, TimeUnit.SECONDS);
                    if (m == null) {
                        throw new IllegalStateException(
                                "timed out on " + task.get("topic").asText() + " after " + n);
                    }
                    ObjectNode line = MAPPER.createObjectNode();
                    line.put("topic", task.get("topic").asText());
                    line.set("value", plain(m.getValue()));
                    System.out.println("GOT " + MAPPER.writeValueAsString(line));
                    c.acknowledge(m);
                }
                c.close();
            }
        }
        client.close();
        System.out.println("DONE");
    }
}
