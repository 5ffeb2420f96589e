// The Java client (the official client with transactions) writes two transactions for
// tests/transactions/test_java_interop.py: one committed, one aborted. Run with the Apache
// Pulsar fixture's classpath: java -cp <classpath> JavaTxnWriter.java <url> <topic>
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.transaction.Transaction;

public class JavaTxnWriter {
    public static void main(String[] args) throws Exception {
        PulsarClient client =
                PulsarClient.builder().serviceUrl(args[0]).enableTransaction(true).build();
        Producer<byte[]> producer =
                client.newProducer().topic(args[1]).sendTimeout(0, TimeUnit.SECONDS).create();
        Transaction kept =
                client.newTransaction().withTransactionTimeout(60, TimeUnit.SECONDS).build().get();
        producer.newMessage(kept).value("java-committed-1".getBytes()).send();
        producer.newMessage(kept).value("java-committed-2".getBytes()).send();
        Transaction dropped =
                client.newTransaction().withTransactionTimeout(60, TimeUnit.SECONDS).build().get();
        producer.newMessage(dropped).value("java-aborted".getBytes()).send();
        dropped.abort().get();
        kept.commit().get();
        producer.close();
        client.close();
        System.out.println("WROTE");
    }
}
