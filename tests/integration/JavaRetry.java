// The Java client's retry-letter topic for tests/integration/test_retry_letter.py: a Shared
// consumer with enableRetry(true) on <topic>/<subscription>. Every message without a
// RECONSUMETIMES property is handed back with reconsumeLater(<delay ms>); every one with it is
// acknowledged. Each message is printed as one line: MSG <data>|<sorted properties>. Exits
// after <idle ms> without a message. Run with the Apache fixture's classpath:
// java -cp <classpath> JavaRetry.java <url> <topic> <subscription> <delay ms> <idle ms>
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

public class JavaRetry {
    public static void main(String[] args) throws Exception {
        PulsarClient client = PulsarClient.builder().serviceUrl(args[0]).build();
        Consumer<byte[]> consumer = client.newConsumer()
                .topic(args[1])
                .subscriptionName(args[2])
                .subscriptionType(SubscriptionType.Shared)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .enableRetry(true)
                .subscribe();
        long delay = Long.parseLong(args[3]);
        int idle = Integer.parseInt(args[4]);
        while (true) {
            Message<byte[]> m = consumer.receive(idle, TimeUnit.MILLISECONDS);
            if (m == null) {
                break;
            }
            System.out.println("MSG " + new String(m.getData()) + "|" + new TreeMap<>(m.getProperties()));
            if (m.getProperties().containsKey("RECONSUMETIMES")) {
                consumer.acknowledge(m);
            } else {
                consumer.reconsumeLater(m, delay, TimeUnit.MILLISECONDS);
            }
        }
        consumer.close();
        client.close();
        System.out.println("DONE");
    }
}
