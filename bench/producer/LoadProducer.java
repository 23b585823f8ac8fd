import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The steady-load bench's producer (bench/lib/load-producer.ts): records already encoded by the bench
 * come in on stdin, Kafka's own Java client publishes them, and each flush is answered on stdout with
 * the first offset every partition was given since the previous one. Kafka's client encodes a record
 * in a few microseconds where kafkajs takes about twenty, on cores the projector and Neo4j share.
 *
 * Run in source-file mode with the stack's broker jars: java -cp 'stack/kafka/target/lib/*'
 * LoadProducer.java BOOTSTRAP. Frames on stdin, big-endian:
 *   'T' u16 length, name (UTF-8)                          declares the next topic index (0, 1, ...)
 *   'R' u16 topic index, i32 key length, key, i32 value length, value, i64 timestamp (ms)
 *   'F'                                                   flush; answered with one JSON line
 * Answer: {"firsts":[[topicIndex,partition,offset],...]}, or {"error":"..."} before exiting 1.
 */
public final class LoadProducer {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    props.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(256 * 1024));
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 20));
    List<String> topics = new ArrayList<>();
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    List<Integer> sentTopic = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      for (;;) {
        int frame;
        try {
          frame = in.readUnsignedByte();
        } catch (EOFException end) {
          break;
        }
        switch (frame) {
          case 'T' -> {
            byte[] name = new byte[in.readUnsignedShort()];
            in.readFully(name);
            topics.add(new String(name, StandardCharsets.UTF_8));
          }
          case 'R' -> {
            int topic = in.readUnsignedShort();
            byte[] key = bytes(in);
            byte[] value = bytes(in);
            long timestamp = in.readLong();
            sent.add(producer.send(new ProducerRecord<>(topics.get(topic), null, timestamp, key, value)));
            sentTopic.add(topic);
          }
          case 'F' -> {
            producer.flush();
            // Per topic index and partition, the lowest offset this flush's records were given.
            Map<Long, Long> firsts = new TreeMap<>();
            for (int i = 0; i < sent.size(); i++) {
              RecordMetadata metadata;
              try {
                metadata = sent.get(i).get();
              } catch (ExecutionException failed) {
                fail(out, String.valueOf(failed.getCause()));
                return;
              }
              long slot = ((long) sentTopic.get(i) << 32) | metadata.partition();
              firsts.merge(slot, metadata.offset(), Math::min);
            }
            sent.clear();
            sentTopic.clear();
            StringBuilder line = new StringBuilder("{\"firsts\":[");
            boolean first = true;
            for (Map.Entry<Long, Long> entry : firsts.entrySet()) {
              if (!first) line.append(',');
              first = false;
              line.append('[').append(entry.getKey() >>> 32).append(',').append(entry.getKey() & 0xffffffffL)
                  .append(',').append(entry.getValue()).append(']');
            }
            out.println(line.append("]}"));
            out.flush();
          }
          default -> {
            fail(out, "unknown frame " + frame);
            return;
          }
        }
      }
    } catch (RuntimeException error) {
      fail(out, String.valueOf(error));
    }
  }

  private static byte[] bytes(DataInputStream in) throws java.io.IOException {
    int length = in.readInt();
    if (length < 0) return null;
    byte[] data = new byte[length];
    in.readFully(data);
    return data;
  }

  private static void fail(PrintStream out, String message) {
    out.println("{\"error\":\"" + message.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"}");
    out.flush();
    System.exit(1);
  }
}
