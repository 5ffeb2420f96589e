// The Java client's TableView of a topic, printed for tests/interop/test_table_view_java.py.
// Usage: java TableViewDump <service-url> <topic>...
// For each topic: one line per entry, "<topic>\t<key>\t<base64 of the value>", sorted by key,
// then "END <topic> <size>". Values are read as bytes (Schema.BYTES).
import java.util.Base64;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.TableView;

public final class TableViewDump {
    public static void main(String[] args) throws Exception {
        try (PulsarClient client = PulsarClient.builder()
                .serviceUrl(args[0])
                .operationTimeout(120, TimeUnit.SECONDS)
                .build()) {
            for (int i = 1; i < args.length; i++) {
                String topic = args[i];
                try (TableView<byte[]> view = client.newTableView(Schema.BYTES).topic(topic).create()) {
                    TreeMap<String, byte[]> sorted = new TreeMap<>();
                    view.forEach(sorted::put);
                    for (var e : sorted.entrySet()) {
                        System.out.println(topic + "\t" + e.getKey() + "\t"
                                + Base64.getEncoder().encodeToString(e.getValue()));
                    }
                    System.out.println("END " + topic + " " + view.size());
                }
            }
        }
    }
}
