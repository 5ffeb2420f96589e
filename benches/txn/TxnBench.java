// The reference side of benches/txn_latency.py: the Java client (the one official client with
// transactions) runs the same loop as streamwire: open a transaction, send one 100 B message
// in it, commit. Prints "<total ns> <commit ns>" per transaction after the warm-up ones.
// Run by benches/txn_latency.py with the Apache Pulsar fixture's classpath (java -cp ... File.java).
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.transaction.Transaction;

public class TxnBench {
    public static void main(String[] args) throws Exception {
        String url = args[0];
        int n = Integer.parseInt(args[1]);
        int warmup = Integer.parseInt(args[2]);
        String topic = args[3];
        PulsarClient client = PulsarClient.builder().serviceUrl(url).enableTransaction(true).build();
        // The Java client refuses transactional sends on a producer with a send timeout.
        Producer<byte[]> producer =
                client.newProducer().topic(topic).sendTimeout(0, TimeUnit.SECONDS).create();
        byte[] payload = new byte[100];
        for (int i = 0; i < warmup + n; i++) {
            long t0 = System.nanoTime();
            Transaction txn =
                    client.newTransaction().withTransactionTimeout(60, TimeUnit.SECONDS).build().get();
            producer.newMessage(txn).value(payload).send();
            long t1 = System.nanoTime();
            txn.commit().get();
            long t2 = System.nanoTime();
            if (i >= warmup) {
                System.out.println((t2 - t0) + " " + (t2 - t1));
            }
        }
        producer.close();
        client.close();
    }
}
