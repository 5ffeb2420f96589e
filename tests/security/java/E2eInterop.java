// The Java client's side of tests/security/test_e2e_java.py: end-to-end encryption against the
// official Java client (pulsar-client 4.0.x on the Apache fixture's classpath).
//
//   java E2eInterop <service-url> produce <topic> <public.pem> <key-name> <batching> <codec> <n>
//       sends n payloads "java-<i>" encrypted for <key-name>, then prints "e2e done".
//   java E2eInterop <service-url> consume <topic> <private.pem> <n>
//       reads n messages from the earliest position, decrypting them, and prints each payload
//       in base64 on a line of its own ("msg <base64>"), then "e2e done". (The client's own log
//       lines may come in between on stdout.)
//
// The key reader is our own few lines over the CryptoKeyReader interface: it hands the same
// PEM file to every key name, as the official DefaultCryptoKeyReader with one default key.

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.ConsumerCryptoFailureAction;
import org.apache.pulsar.client.api.CryptoKeyReader;
import org.apache.pulsar.client.api.EncryptionKeyInfo;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;

public class E2eInterop {
    static final class FileKeys implements CryptoKeyReader {
        private final byte[] pem;

        FileKeys(String path) throws Exception {
            pem = Files.readAllBytes(Paths.get(path));
        }

        @Override
        public EncryptionKeyInfo getPublicKey(String keyName, Map<String, String> metadata) {
            return new EncryptionKeyInfo(pem, null);
        }

        @Override
        public EncryptionKeyInfo getPrivateKey(String keyName, Map<String, String> metadata) {
            return new EncryptionKeyInfo(pem, null);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String mode = args[1];
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url).build()) {
            if (mode.equals("produce")) {
                String topic = args[2];
                boolean batching = Boolean.parseBoolean(args[5]);
                int n = Integer.parseInt(args[7]);
                try (Producer<byte[]> p = client.newProducer()
                        .topic(topic)
                        .addEncryptionKey(args[4])
                        .cryptoKeyReader(new FileKeys(args[3]))
                        .enableBatching(batching)
                        .batchingMaxPublishDelay(5, TimeUnit.MILLISECONDS)
                        .compressionType(CompressionType.valueOf(args[6]))
                        .create()) {
                    for (int i = 0; i < n; i++) {
                        p.sendAsync(("java-" + i).getBytes());
                    }
                    p.flush();
                }
            } else {
                String topic = args[2];
                int n = Integer.parseInt(args[4]);
                try (Consumer<byte[]> c = client.newConsumer()
                        .topic(topic)
                        .subscriptionName("java-check")
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                        .cryptoKeyReader(new FileKeys(args[3]))
                        .cryptoFailureAction(ConsumerCryptoFailureAction.FAIL)
                        .subscribe()) {
                    for (int i = 0; i < n; i++) {
                        Message<byte[]> m = c.receive(30, TimeUnit.SECONDS);
                        if (m == null) {
                            System.out.println("msg timeout");
                            break;
                        }
                        System.out.println("msg " + Base64.getEncoder().encodeToString(m.getData()));
                        c.acknowledge(m);
                    }
                }
            }
        }
        System.out.println("e2e done");
    }
}
