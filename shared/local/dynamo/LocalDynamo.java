import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.util.Arrays;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * Starts DynamoDB Local bound to one host (DynamoDB Local itself always listens on every interface)
 * and ends the JVM when its parent goes away. DynamoDB Local runs as shipped otherwise.
 *
 * Usage: java -Djava.library.path=LIB -cp "LAUNCHER:DynamoDBLocal.jar:LIB/*" LocalDynamo HOST [DynamoDB Local options]
 *
 * The server is built the way DynamoDB Local's own main() builds it, minus its telemetry set-up, so
 * nothing is sent anywhere. Before it starts, every Jetty connector is bound to HOST. A daemon thread
 * reads standard input until end of file: the parent holds the write end of that pipe, and the
 * kernel closes it when the parent exits for any reason (kill -9 included), so the JVM never outlives
 * the local stack. Once it serves, it prints `LocalDynamo listening on HOST`.
 *
 * With a database file (-dbPath) it applies its one patch, `sqlite-settings` (SqliteSettings.java),
 * when that class is on the class path: the patch is compiled on its own, and one that did not compile
 * or does not find what it changes costs the patch, not the server. One line says what became of it:
 * `LocalDynamo patch sqlite-settings: applied (...)`, `...: skipped` (the system property
 * tocsin.dynamo.skip names it, to measure without it), or `...: not applied, as shipped: REASON`.
 */
public class LocalDynamo {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: LocalDynamo HOST [DynamoDB Local options]");
      System.exit(2);
    }
    String host = args[0];
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(Arrays.copyOfRange(args, 1, args.length));
    bind(proxy, host);
    endWithParent();
    proxy.start();
    if (Arrays.asList(args).contains("-dbPath")) applySqliteSettings(proxy);
    System.out.println("LocalDynamo listening on " + host);
    System.out.flush();
  }

  /**
   * Runs the sqlite-settings patch in a daemon thread (it waits for the first request to open the
   * database) and says what became of it.
   */
  private static void applySqliteSettings(DynamoDBProxyServer proxy) {
    String name = "sqlite-settings";
    Thread applier = new Thread(() -> {
      String outcome;
      if (Arrays.asList(System.getProperty("tocsin.dynamo.skip", "").split(",")).contains(name)) {
        outcome = "skipped";
      } else {
        try {
          Object done = Class.forName("SqliteSettings").getMethod("applyWhenOpened", Object.class).invoke(null, proxy);
          outcome = "applied (" + done + ")";
        } catch (ClassNotFoundException e) {
          outcome = "not applied, as shipped: it did not compile";
        } catch (InvocationTargetException e) {
          outcome = "not applied, as shipped: " + e.getCause();
        } catch (Throwable t) {
          outcome = "not applied, as shipped: " + t;
        }
      }
      System.out.println("LocalDynamo patch " + name + ": " + outcome);
      System.out.flush();
    }, name);
    applier.setDaemon(true);
    applier.start();
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
