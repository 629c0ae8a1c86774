import java.io.InputStream;
import java.lang.reflect.Field;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * Starts DynamoDB Local bound to one host (DynamoDB Local itself always listens on every interface)
 * and ends the JVM when its parent goes away.
 *
 * Usage: java -Djava.library.path=LIB -cp "LAUNCHER:DynamoDBLocal.jar:LIB/*" LocalDynamo HOST [DynamoDB Local options]
 *
 * The server is built the way DynamoDB Local's own main() builds it, minus its telemetry set-up, so
 * nothing is sent anywhere. Before it starts, every Jetty connector is bound to HOST. A daemon thread
 * reads standard input until end of file: the parent holds the write end of that pipe, and the
 * kernel closes it when the parent exits for any reason (kill -9 included), so the JVM never outlives
 * the local stack.
 *
 * Its patches make DynamoDB Local cheaper per request without changing what it answers; each is a
 * class of its own (StatementMemo, TableDescriptionMemo, SqliteSettings). One line
 * per patch says what became of it: `LocalDynamo patch NAME: applied`, `...: skipped` (named in the
 * system property tocsin.dynamo.skip, a comma-separated list, or `all`), or `...: not applied, as
 * shipped: REASON` (a release whose internals differ: that part of DynamoDB Local runs unchanged).
 */
public class LocalDynamo {
  /** A patch that changes classes before the server is built. */
  private interface ClassChange {
    void apply(ClassLoader loader) throws Exception;
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: LocalDynamo HOST [DynamoDB Local options]");
      System.exit(2);
    }
    String host = args[0];
    Set<String> skip = new HashSet<>(Arrays.asList(System.getProperty("tocsin.dynamo.skip", "").split(",")));
    // Before anything loads the classes they change (a class loaded as shipped cannot be replaced:
    // the patch then says it was not applied).
    patch(skip, StatementMemo.NAME, StatementMemo::apply);
    patch(skip, TableDescriptionMemo.NAME, TableDescriptionMemo::apply);

    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(Arrays.copyOfRange(args, 1, args.length));
    bind(proxy, host);
    endWithParent();
    proxy.start();
    if (Arrays.asList(args).contains("-dbPath")) {
      Thread tuner = new Thread(() -> {
        if (skipped(skip, SqliteSettings.NAME)) return;
        try {
          say(SqliteSettings.NAME, "applied (" + SqliteSettings.applyWhenOpened(proxy) + ")");
        } catch (Throwable t) {
          say(SqliteSettings.NAME, "not applied, as shipped: " + t);
        }
      }, "sqlite-settings");
      tuner.setDaemon(true);
      tuner.start();
    }
    System.out.println("LocalDynamo listening on " + host);
    System.out.flush();
  }

  private static void patch(Set<String> skip, String name, ClassChange change) {
    if (skipped(skip, name)) return;
    try {
      change.apply(LocalDynamo.class.getClassLoader());
      say(name, "applied");
    } catch (Throwable t) {
      say(name, "not applied, as shipped: " + t);
    }
  }

  private static boolean skipped(Set<String> skip, String name) {
    if (!skip.contains(name) && !skip.contains("all")) return false;
    say(name, "skipped");
    return true;
  }

  private static void say(String name, String outcome) {
    System.out.println("LocalDynamo patch " + name + ": " + outcome);
    System.out.flush();
  }

  /** Binds every Jetty connector of the server (a private field DynamoDB Local sets once) to `host`. */
  private static void bind(DynamoDBProxyServer proxy, String host) throws Exception {
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server jetty = (Server) field.get(proxy);
    int bound = 0;
    for (Connector c : jetty.getConnectors()) {
      if (c instanceof ServerConnector) {
        ((ServerConnector) c).setHost(host);
        bound++;
      }
    }
    if (bound == 0) {
      System.err.println("LocalDynamo: no Jetty connector to bind to " + host);
      System.exit(3);
    }
  }

  /** Halts the JVM when standard input (a pipe from the parent) reaches its end. */
  private static void endWithParent() {
    Thread watchdog = new Thread(() -> {
      try {
        InputStream in = System.in;
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
          // the parent never writes; anything it does write is ignored
        }
      } catch (Exception ignored) {
        // a broken pipe means the parent is gone as well
      }
      Runtime.getRuntime().halt(0);
    }, "parent-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
  }
}
