import java.io.InputStream;
import java.lang.reflect.Field;
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
    System.out.println("LocalDynamo listening on " + host);
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
