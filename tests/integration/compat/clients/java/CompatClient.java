// Apache Kafka Java client (org.apache.kafka:kafka-clients, see pom.xml) program for the Shale
// compatibility matrix (see ../../README.md).
//
//   java -cp <lib/*>:<classes> CompatClient create|produce|consume --bootstrap H:P --topic T
//       [--partitions N] [--first I --count N --codecs a,b] [--group G --member M]
//
// Prints one JSON object per line on stdout. The consumer runs on the main thread; SIGTERM runs
// a shutdown hook that sets a flag the poll loop checks, waits until the main thread has committed and
// closed it (leaving the group), then halts with status 0.
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class CompatClient {
  private static final Object OUT = new Object();

  static void emit(String json) {
    synchronized (OUT) {
      System.out.println(json);
      System.out.flush();
    }
  }

  static String q(String s) {
    if (s == null) return "null";
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  static String str(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  static String sha256(byte[] v) throws Exception {
    byte[] d = MessageDigest.getInstance("SHA-256").digest(v == null ? new byte[0] : v);
    StringBuilder b = new StringBuilder();
    for (byte x : d) b.append(String.format("%02x", x & 0xff));
    return b.toString();
  }

  static String key(long i) {
    return "key-" + (i % 1000);
  }

  static String value(long i) {
    return "value-" + i + "-" + String.valueOf((char) ('a' + i % 26)).repeat((int) (i % 500));
  }

  static String parts(Collection<TopicPartition> tps) {
    TreeSet<Integer> s = new TreeSet<>();
    for (TopicPartition tp : tps) s.add(tp.partition());
    StringBuilder b = new StringBuilder("[");
    for (int p : s) b.append(b.length() > 1 ? "," : "").append(p);
    return b.append(']').toString();
  }

  static Map<String, String> parse(String[] argv) {
    Map<String, String> a = new HashMap<>();
    a.put("partitions", "6");
    a.put("first", "0");
    a.put("count", "0");
    a.put("codecs", "none,gzip,snappy,lz4,zstd");
    for (int i = 1; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) throw new IllegalArgumentException("bad option " + argv[i]);
      a.put(argv[i].substring(2), argv[i + 1]);
    }
    return a;
  }

  static void create(Map<String, String> a) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", a.get("bootstrap"));
    try (Admin admin = Admin.create(p)) {
      admin
          .createTopics(
              List.of(new NewTopic(a.get("topic"), Integer.parseInt(a.get("partitions")), (short) 1)))
          .all()
          .get(60, TimeUnit.SECONDS);
    }
    emit("{\"ev\":\"created\",\"topic\":" + q(a.get("topic")) + "}");
  }

  static int produce(Map<String, String> a) throws Exception {
    String[] codecs = a.get("codecs").split(",");
    long first = Long.parseLong(a.get("first"));
    long count = Long.parseLong(a.get("count"));
    int n = codecs.length;
    AtomicInteger failures = new AtomicInteger();
    for (int ci = 0; ci < n; ci++) {
      String codec = codecs[ci];
      long lo = first + (ci * count + n - 1) / n;
      long hi = first + ((ci + 1) * count + n - 1) / n;
      Properties p = new Properties();
      p.put("bootstrap.servers", a.get("bootstrap"));
      p.put("enable.idempotence", "true");
      p.put("acks", "all");
      p.put("compression.type", codec);
      p.put("linger.ms", "5");
      p.put("key.serializer", ByteArraySerializer.class.getName());
      p.put("value.serializer", ByteArraySerializer.class.getName());
      try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(p)) {
        for (long i = lo; i < hi; i++) {
          ProducerRecord<byte[], byte[]> r =
              new ProducerRecord<>(
                  a.get("topic"),
                  key(i).getBytes(StandardCharsets.UTF_8),
                  value(i).getBytes(StandardCharsets.UTF_8));
          r.headers().add("idx", Long.toString(i).getBytes(StandardCharsets.UTF_8));
          r.headers().add("codec", codec.getBytes(StandardCharsets.UTF_8));
          final long idx = i;
          prod.send(
              r,
              (md, e) -> {
                if (e != null) {
                  failures.incrementAndGet();
                  emit("{\"ev\":\"error\",\"i\":" + idx + ",\"error\":" + q(e.toString()) + "}");
                } else {
                  emit(
                      "{\"ev\":\"ack\",\"i\":" + idx + ",\"p\":" + md.partition() + ",\"o\":"
                          + md.offset() + "}");
                }
              });
        }
        prod.flush();
      }
    }
    emit("{\"ev\":\"done\"}");
    return failures.get() == 0 ? 0 : 1;
  }

  static int consume(Map<String, String> a) throws Exception {
    String topic = a.get("topic");
    Properties p = new Properties();
    p.put("bootstrap.servers", a.get("bootstrap"));
    p.put("group.id", a.get("group"));
    p.put("client.id", a.get("member"));
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    p.put("session.timeout.ms", "10000");
    p.put("max.poll.records", "500");
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p);
    Map<TopicPartition, OffsetAndMetadata> pending = new TreeMap<>(
        (x, y) -> Integer.compare(x.partition(), y.partition()));
    Runnable commitPending =
        () -> {
          if (pending.isEmpty()) return;
          try {
            c.commitSync(pending);
          } catch (RuntimeException e) {
            emit("{\"ev\":\"commit_failed\",\"error\":" + q(e.toString()) + "}");
            return;
          }
          StringBuilder b = new StringBuilder();
          for (Map.Entry<TopicPartition, OffsetAndMetadata> e : pending.entrySet()) {
            b.append(b.length() > 0 ? "," : "")
                .append('"')
                .append(e.getKey().partition())
                .append("\":")
                .append(e.getValue().offset());
          }
          emit("{\"ev\":\"commit\",\"offs\":{" + b + "}}");
          pending.clear();
        };
    stopping = false;
    CountDownLatch done = new CountDownLatch(1);
    Thread main = Thread.currentThread();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  // No wakeup(): it could interrupt a commitSync; polls return every 200 ms.
                  stopping = true;
                  boolean clean = false;
                  try {
                    clean = done.await(60, TimeUnit.SECONDS);
                    main.join(10000);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  // A JVM ended by SIGTERM exits with 143; report the clean close as success.
                  Runtime.getRuntime().halt(clean ? 0 : 1);
                }));
    emit("{\"ev\":\"started\"}"); // from here on SIGTERM means a clean close
    c.subscribe(
        List.of(topic),
        new ConsumerRebalanceListener() {
          @Override
          public void onPartitionsRevoked(Collection<TopicPartition> tps) {
            // Commit what was consumed before another member takes the partitions over.
            commitPending.run();
            emit("{\"ev\":\"revoked\",\"parts\":" + parts(tps) + "}");
          }

          @Override
          public void onPartitionsAssigned(Collection<TopicPartition> tps) {
            emit("{\"ev\":\"assigned\",\"parts\":" + parts(tps) + "}");
          }
        });
    try {
      while (!stopping) {
        ConsumerRecords<byte[], byte[]> recs;
        recs = c.poll(Duration.ofMillis(200));
        for (ConsumerRecord<byte[], byte[]> r : recs) {
          StringBuilder h = new StringBuilder("[");
          for (Header hd : r.headers()) {
            h.append(h.length() > 1 ? "," : "")
                .append('[')
                .append(q(hd.key()))
                .append(',')
                .append(q(str(hd.value())))
                .append(']');
          }
          h.append(']');
          emit(
              "{\"ev\":\"rec\",\"p\":" + r.partition() + ",\"o\":" + r.offset() + ",\"k\":"
                  + q(str(r.key())) + ",\"vh\":\"" + sha256(r.value()) + "\",\"h\":" + h + "}");
          pending.put(
              new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        commitPending.run();
      }
      commitPending.run();
    } finally {
      c.close(CloseOptions.timeout(Duration.ofSeconds(30)));
      emit("{\"ev\":\"closed\"}");
      done.countDown();
    }
    return 0;
  }

  static volatile boolean stopping;

  public static void main(String[] argv) throws Exception {
    if (argv.length < 1) {
      System.err.println("usage: CompatClient create|produce|consume --bootstrap H:P --topic T ...");
      System.exit(2);
    }
    Map<String, String> a = parse(argv);
    int rc;
    switch (argv[0]) {
      case "create":
        create(a);
        rc = 0;
        break;
      case "produce":
        rc = produce(a);
        break;
      case "consume":
        rc = consume(a);
        break;
      default:
        System.err.println("unknown command " + argv[0]);
        rc = 2;
    }
    // The consumer path returns normally after close; exit explicitly so no client thread
    // keeps the JVM alive. (Runtime.exit inside a shutdown hook would deadlock, so only here.)
    if (!stopping) System.exit(rc);
  }
}
