// The Java client's TableView of a partitioned topic that gains partitions while the view is
// open, for tests/interop/test_table_view.py.
// Usage: java TableViewGrow <service-url> <topic>
// Opens the view with partitions checked every second (autoUpdatePartitionsInterval), prints
// "READY <size>", then waits for a line "<n>" on stdin (the test has added partitions and
// written to them), polls until the view holds n keys or 60 s pass, and prints the entries as
// TableViewDump does: "<topic>\t<key>\t<base64 of the value>" sorted by key, then
// "END <topic> <size>".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Base64;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.TableView;

public final class TableViewGrow {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        try (PulsarClient client = PulsarClient.builder()
                .serviceUrl(args[0])
                .operationTimeout(120, TimeUnit.SECONDS)
                .build();
             TableView<byte[]> view = client.newTableView(Schema.BYTES)
                .topic(topic)
                .autoUpdatePartitionsInterval(1, TimeUnit.SECONDS)
                .create()) {
            System.out.println("READY " + view.size());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            int want = Integer.parseInt(in.readLine().trim());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (view.size() < want && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
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
