package dev.agentgraph.stack;

import static org.neo4j.configuration.GraphDatabaseSettings.SYSTEM_DATABASE_NAME;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.configuration.ssl.ClientAuth;
import org.neo4j.configuration.ssl.SslPolicyConfig;
import org.neo4j.configuration.ssl.SslPolicyScope;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.QueryExecutionException;
import org.neo4j.io.ByteUnit;

/**
 * Runs a Neo4j Community DBMS in this JVM with Bolt and authentication enabled, until SIGTERM/SIGINT.
 *
 * <p>Usage: {@code --home DIR --bolt-address HOST:PORT}, the password in the environment variable
 * {@code NEO4J_PASSWORD} (so that it does not show in the process list); {@code --password PW} also works.
 * (env fallbacks: NEO4J_HOME_DIR, NEO4J_BOLT_ADDRESS, NEO4J_PASSWORD). With {@code --tls-dir DIR}
 * (holding {@code server.key}, PKCS#8 PEM, and {@code server.crt}) Bolt also accepts TLS connections.
 * {@code --pagecache SIZE} (env NEO4J_PAGECACHE; a number of mebibytes, or with a k/m/g suffix) sizes the
 * page cache, 384 MiB by default.
 */
public final class Neo4jLauncher {
  private static final String USER = "neo4j";

  public static void main(String[] args) throws InterruptedException {
    Map<String, String> opts = parseArgs(args);
    String home = option(opts, "--home", "NEO4J_HOME_DIR", null);
    String boltAddress = option(opts, "--bolt-address", "NEO4J_BOLT_ADDRESS", "127.0.0.1:7687");
    String password = option(opts, "--password", "NEO4J_PASSWORD", null);
    if (home == null || password == null) {
      fail("usage: NEO4J_PASSWORD=PW Neo4jLauncher --home DIR [--bolt-address HOST:PORT]");
    }
    // Neo4j rejects shorter passwords anyway, but only after the DBMS is up; fail before that.
    if (password.length() < 8) {
      fail("password must be at least 8 characters (Neo4j's default minimum)");
    }
    SocketAddress bolt = parseAddress(boltAddress);
    String tlsDir = option(opts, "--tls-dir", "NEO4J_TLS_DIR", null);
    long pagecacheBytes = parseSize(option(opts, "--pagecache", "NEO4J_PAGECACHE", "384m"));

    DatabaseManagementServiceBuilder builder =
        new DatabaseManagementServiceBuilder(Path.of(home).toAbsolutePath());
    if (tlsDir != null) {
      // Secured stack mode: TLS offered on the same Bolt port; plain clients still connect.
      SslPolicyConfig bolt_tls = SslPolicyConfig.forScope(SslPolicyScope.BOLT);
      Path dir = Path.of(tlsDir).toAbsolutePath();
      builder
          .setConfig(bolt_tls.enabled, true)
          .setConfig(bolt_tls.base_directory, dir)
          .setConfig(bolt_tls.private_key, dir.resolve("server.key"))
          .setConfig(bolt_tls.public_certificate, dir.resolve("server.crt"))
          .setConfig(bolt_tls.client_auth, ClientAuth.NONE);
    }
    DatabaseManagementService dbms =
        builder
            .setConfig(BoltConnector.enabled, true)
            .setConfig(BoltConnector.listen_address, bolt)
            // What the routing table names (neo4j:// URIs): without it, localhost:7687, whatever
            // listens there.
            .setConfig(BoltConnector.advertised_address, bolt)
            .setConfig(
                BoltConnector.encryption_level,
                tlsDir == null
                    ? BoltConnector.EncryptionLevel.DISABLED
                    : BoltConnector.EncryptionLevel.OPTIONAL)
            // The embedded API bypasses auth; this only affects Bolt clients.
            .setConfig(GraphDatabaseSettings.auth_enabled, true)
            // Bolt waits 5s + 5s for idle threads/connections on shutdown by default, long after the
            // databases are checkpointed and closed; a supervisor restarting us should not wait for that.
            .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1))
            .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))
            .setConfig(HttpConnector.enabled, false)
            .setConfig(HttpsConnector.enabled, false)
            // 384 MiB by default: sized for a 1 GiB heap on a developer machine, not for production.
            .setConfig(GraphDatabaseSettings.pagecache_memory, pagecacheBytes)
            .setConfig(GraphDatabaseSettings.memory_transaction_global_max_size, ByteUnit.mebiBytes(256))
            .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(64))
            // SHOW TRANSACTIONS then reports cpuTime and idleTime: whether a long write was working,
            // waiting on a lock or waiting for its client (the benchmark's long-transaction watch).
            .setConfig(GraphDatabaseSettings.track_query_cpu_time, true)
            .setConfig(GraphDatabaseSettings.keep_logical_logs, "256M size")
            .build();

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  dbms.shutdown();
                  stopped.countDown();
                },
                "neo4j-shutdown"));

    try {
      applyPassword(dbms.database(SYSTEM_DATABASE_NAME), password);
    } catch (RuntimeException e) {
      System.err.println("neo4j-launcher: could not set the password for user neo4j: " + e.getMessage());
      System.exit(1);
    }

    System.out.println("NEO4J READY bolt://" + bolt.getHostname() + ":" + bolt.getPort());
    System.out.flush();
    stopped.await();
  }

  /**
   * The argument is the source of truth: it is (re)applied on every start, so the first start
   * replaces the default neo4j/neo4j and a changed argument on a later start updates the password.
   */
  private static void applyPassword(GraphDatabaseService system, String password) {
    try {
      system.executeTransactionally(
          "ALTER USER " + USER + " SET PLAINTEXT PASSWORD $pw CHANGE NOT REQUIRED",
          Map.of("pw", password));
    } catch (QueryExecutionException e) {
      // Neo4j refuses to "change" a password to its current value; that means it is already right.
      if (e.getMessage() == null || !e.getMessage().contains("cannot be the same")) {
        throw e;
      }
    }
  }

  private static SocketAddress parseAddress(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    try {
      return new SocketAddress(
          hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    } catch (RuntimeException e) {
      fail("bad --bolt-address '" + hostPort + "', expected HOST:PORT");
      return null;
    }
  }

  /** "512m", "2g", "65536k" or a bare number of mebibytes, as bytes. */
  private static long parseSize(String size) {
    String s = size.trim().toLowerCase();
    long unit = ByteUnit.mebiBytes(1);
    char last = s.isEmpty() ? ' ' : s.charAt(s.length() - 1);
    if (last == 'k' || last == 'm' || last == 'g') {
      unit = last == 'k' ? ByteUnit.kibiBytes(1) : last == 'm' ? ByteUnit.mebiBytes(1) : ByteUnit.gibiBytes(1);
      s = s.substring(0, s.length() - 1);
    }
    try {
      long n = Long.parseLong(s);
      if (n > 0) return n * unit;
    } catch (NumberFormatException e) {
      // reported below
    }
    fail("bad --pagecache '" + size + "', expected a size such as 384m or 2g");
    return 0;
  }

  private static Map<String, String> parseArgs(String[] args) {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        fail("unexpected argument '" + args[i] + "'");
      }
      opts.put(args[i], args[++i]);
    }
    return opts;
  }

  private static String option(Map<String, String> opts, String flag, String env, String fallback) {
    String value = opts.getOrDefault(flag, System.getenv(env));
    return value == null || value.isEmpty() ? fallback : value;
  }

  private static void fail(String message) {
    System.err.println("neo4j-launcher: " + message);
    System.exit(2);
  }
}
