// The Java client's side of tests/security/test_e2e_java.py: end-to-end encryption against the
// official Java client (pulsar-client 4.0.x on the Apache fixture's classpath).
//
//   java E2eInterop <service-url> produce <topic> <public.pem> <key-name> <batching> <codec> <n>
//                   [<chunk-max-bytes> <size>]
//       sends n payloads "java-<i>" encrypted for <key-name>, then prints "e2e done". With a
//       chunk size above 0: chunking on (batching off) with that chunk size, and the payloads
//       are payload(i, size) below instead (tests/security/test_e2e_java.py makes the same).
//   java E2eInterop <service-url> consume <topic> <private.pem> <n> [<subscription>]
//       reads n messages from the earliest position (subscription "java-check" by default), decrypting them, and prints each payload
//       in base64 on a line of its own ("msg <base64>"; a payload above 64 KiB as "big <length>
//       <sha-256 hex>"), then "e2e done". (The client's own log lines may come in between on
//       stdout.)
//
// The key reader is our own few lines over the CryptoKeyReader interface: it hands the same
// PEM file to every key name, as the official DefaultCryptoKeyReader with one default key. The
// file may hold an RSA or an EC key (the Java client wraps the data key with ECIES for EC).

import java.security.MessageDigest;
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
import org.apache.pulsar.client.api.ProducerBuilder;
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

    /** Payload i of a chunked run: its first half from a xorshift64 stream, the rest zeros
     * (so a codec has something to compress). */
    static byte[] payload(int i, int size) {
        byte[] out = new byte[size];
        long x = 0x9E3779B97F4A7C15L * (i + 1);
        for (int j = 0; j < size / 2; j++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            out[j] = (byte) x;
        }
        return out;
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte v : b) {
            s.append(String.format("%02x", v));
        }
        return s.toString();
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String mode = args[1];
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url).build()) {
            if (mode.equals("produce")) {
                String topic = args[2];
                boolean batching = Boolean.parseBoolean(args[5]);
                int n = Integer.parseInt(args[7]);
                int chunk = args.length > 8 ? Integer.parseInt(args[8]) : 0;
                int size = args.length > 9 ? Integer.parseInt(args[9]) : 0;
                ProducerBuilder<byte[]> b = client.newProducer()
                        .topic(topic)
                        .addEncryptionKey(args[4])
                        .cryptoKeyReader(new FileKeys(args[3]))
                        .enableBatching(batching && chunk == 0)
                        .batchingMaxPublishDelay(5, TimeUnit.MILLISECONDS)
                        .compressionType(CompressionType.valueOf(args[6]));
                if (chunk > 0) {
                    b = b.enableChunking(true).chunkMaxMessageSize(chunk);
                }
                try (Producer<byte[]> p = b.create()) {
                    for (int i = 0; i < n; i++) {
                        p.sendAsync(chunk > 0 ? payload(i, size) : ("java-" + i).getBytes());
                    }
                    p.flush();
                }
            } else {
                String topic = args[2];
                int n = Integer.parseInt(args[4]);
                try (Consumer<byte[]> c = client.newConsumer()
                        .topic(topic)
                        .subscriptionName(args.length > 5 ? args[5] : "java-check")
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
                        byte[] data = m.getData();
                        if (data.length > 65536) {
                            byte[] d = MessageDigest.getInstance("SHA-256").digest(data);
                            System.out.println("big " + data.length + " " + hex(d));
                        } else {
                            System.out.println("msg " + Base64.getEncoder().encodeToString(data));
                        }
                        c.acknowledge(m);
                    }
                }
            }
        }
        System.out.println("e2e done");
    }
}
