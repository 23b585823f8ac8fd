import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.QuorumInfo;

/**
 * Prints the KRaft metadata quorum as one JSON line: the active controller (the quorum leader), its
 * epoch and each voter's log end offset. Run from source by stack/servers/kafka.ts with the broker
 * jars on the class path: {@code java -cp 'lib/*' QuorumStatus.java HOST:PORT,...} (controller
 * listeners). kafkajs has no DescribeQuorum, and a KRaft broker's metadata names a random broker as
 * "controller", so this asks the controllers themselves.
 */
public final class QuorumStatus {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, args[0]);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    try (Admin admin = Admin.create(props)) {
      QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get(40, TimeUnit.SECONDS);
      String voters =
          quorum.voters().stream()
              .map(v -> "{\"id\":" + v.replicaId() + ",\"logEndOffset\":" + v.logEndOffset() + "}")
              .collect(Collectors.joining(","));
      System.out.println(
          "{\"leaderId\":"
              + quorum.leaderId()
              + ",\"leaderEpoch\":"
              + quorum.leaderEpoch()
              + ",\"highWatermark\":"
              + quorum.highWatermark()
              + ",\"voters\":["
              + voters
              + "]}");
    }
  }
}
