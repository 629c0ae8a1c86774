import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteJob;
import com.almworks.sqlite4java.SQLiteQueue;
import com.almworks.sqlite4java.SQLiteStatement;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;
import software.amazon.dynamodb.services.local.shared.mapper.DynamoDbObjectMapper;

/**
 * Starts DynamoDB Local bound to one host (DynamoDB Local itself always listens on every interface)
 * and ends the JVM when its parent goes away.
 *
 * Usage: java -Djava.library.path=LIB -cp "DynamoDBLocal.jar:LIB/*" LocalDynamo HOST [DynamoDB Local options]
 *
 * The server is built the way DynamoDB Local's own main() builds it, minus its telemetry set-up, so
 * nothing is sent anywhere. Before it starts, every Jetty connector is bound to HOST. A daemon thread
 * reads standard input until end of file: the parent holds the write end of that pipe, and the
 * kernel closes it when the parent exits for any reason (kill -9 included), so the JVM never outlives
 * the local stack.
 *
 * With a database file (-dbPath), every connection DynamoDB Local opens gets two settings SQLite
 * does not keep in the file: `synchronous = NORMAL` (in write-ahead-log mode a commit is appended to
 * the log before the request is answered, so it survives the process dying, kill -9 included; only an
 * operating-system crash can lose the last commits, as for the SQS emulator's store) instead of
 * FULL, which syncs the disk on every write request, and `temp_store = MEMORY` (statement journals in
 * memory, not a temporary file created and unlinked per write). Together they were a third of the
 * emulator's CPU per alarm (bench:ingest).
 */
public class LocalDynamo {
  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: LocalDynamo HOST [DynamoDB Local options]");
      System.exit(2);
    }
    String host = args[0];
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(Arrays.copyOfRange(args, 1, args.length));
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

    memoizeTableSchemas();
    proxy.start();
    if (Arrays.asList(args).contains("-dbPath")) {
      Thread tuner = new Thread(() -> tuneWhenOpened(proxy), "sqlite-tuner");
      tuner.setDaemon(true);
      tuner.start();
    }
    System.out.println("LocalDynamo listening on " + host);
    System.out.flush();
  }

  /**
   * DynamoDB Local opens its database at the first request: look for its connection until it is
   * there (the stack's start sends that request and waits for this line), then set it up. A setting
   * cannot change inside a transaction: a connection found in one is tried again a moment later. The
   * settings are read back; the line says what they are. Gives up (and says so) after 20 s.
   */
  static void tuneWhenOpened(Object proxy) {
    long deadline = System.currentTimeMillis() + 20_000;
    try {
      for (;;) {
        List<SQLiteQueue> queues = sqliteQueues(proxy);
        List<String> settings = new ArrayList<>();
        for (SQLiteQueue queue : queues) {
          String got = queue.execute(new SQLiteJob<String>() {
            @Override
            protected String job(SQLiteConnection connection) throws Throwable {
              if (!connection.getAutoCommit()) return null;
              connection.exec("PRAGMA synchronous = NORMAL");
              connection.exec("PRAGMA temp_store = MEMORY");
              return "synchronous=" + pragma(connection, "synchronous") + " temp_store=" + pragma(connection, "temp_store");
            }
          }).get();
          if (got != null) settings.add(got);
        }
        if (!queues.isEmpty() && settings.size() == queues.size()) {
          boolean ok = settings.stream().allMatch(x -> x.equals("synchronous=1 temp_store=2"));
          System.out.println(ok
              ? "LocalDynamo tuned " + queues.size() + " database connection(s)"
              : "LocalDynamo could not tune its database: settings are " + settings);
          System.out.flush();
          return;
        }
        if (System.currentTimeMillis() > deadline) {
          System.out.println("LocalDynamo could not tune its database: "
              + (queues.isEmpty() ? "no database connection found" : "its connection stayed in a transaction"));
          System.out.flush();
          return;
        }
        Thread.sleep(20);
      }
    } catch (Throwable t) {
      System.out.println("LocalDynamo could not tune its database: " + t);
      System.out.flush();
    }
  }

  /**
   * DynamoDB Local reads its table's description from its database and parses it (JSON, with every
   * index) on every item it reads or writes: that parsing was about a third of its database thread's
   * CPU per alarm (bench:ingest). The object mapper it parses with is swapped for one that keeps the
   * last descriptions it parsed, by their exact bytes: a changed table (UpdateTable, a TTL setting) has
   * different bytes and is parsed afresh. Without it (a release whose internals differ) the server
   * runs as shipped, and the line says so.
   */
  static void memoizeTableSchemas() {
    try {
      Class<?> access = Class.forName("software.amazon.dynamodb.services.local.shared.access.sqlite.SQLiteDBAccess");
      Class<?> schema = Class.forName("software.amazon.dynamodb.services.local.shared.access.sqlite.TableSchemaInfo");
      Field mapper = access.getDeclaredField("MAPPER");
      if (!DynamoDbObjectMapper.class.equals(mapper.getType())) throw new IllegalStateException("MAPPER is a " + mapper.getType());
      Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
      Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
      theUnsafe.setAccessible(true);
      Object unsafe = theUnsafe.get(null);
      Method base = unsafeClass.getMethod("staticFieldBase", Field.class);
      Method offset = unsafeClass.getMethod("staticFieldOffset", Field.class);
      Method put = unsafeClass.getMethod("putObjectVolatile", Object.class, long.class, Object.class);
      put.invoke(unsafe, base.invoke(unsafe, mapper), offset.invoke(unsafe, mapper), new SchemaMemoMapper(schema));
      mapper.setAccessible(true);
      if (!(mapper.get(null) instanceof SchemaMemoMapper)) throw new IllegalStateException("MAPPER not replaced");
      System.out.println("LocalDynamo memoizes table descriptions");
      System.out.flush();
    } catch (Throwable t) {
      System.out.println("LocalDynamo could not memoize table descriptions: " + t);
      System.out.flush();
    }
  }

  /** DynamoDB Local's mapper, parsing each table description's bytes once (the last 32 kept). */
  static final class SchemaMemoMapper extends DynamoDbObjectMapper {
    private static final long serialVersionUID = 1L;
    private final transient Class<?> schema;
    private final transient Map<ByteBuffer, Object> parsed = Collections.synchronizedMap(
        new LinkedHashMap<ByteBuffer, Object>(16, 0.75f, true) {
          private static final long serialVersionUID = 1L;

          @Override
          protected boolean removeEldestEntry(Map.Entry<ByteBuffer, Object> eldest) {
            return size() > 32;
          }
        });

    SchemaMemoMapper(Class<?> schema) {
      this.schema = schema;
    }

    @Override
    public <T> T readValue(byte[] src, Class<T> type) throws IOException {
      if (type != schema) return super.readValue(src, type);
      ByteBuffer key = ByteBuffer.wrap(src.clone());
      Object hit = parsed.get(key);
      if (hit == null) {
        hit = super.readValue(src, type);
        parsed.put(key, hit);
      }
      return type.cast(hit);
    }
  }

  static String pragma(SQLiteConnection connection, String name) throws Exception {
    SQLiteStatement st = connection.prepare("PRAGMA " + name);
    try {
      return st.step() ? st.columnString(0) : "?";
    } finally {
      st.dispose();
    }
  }

  /**
   * The SQLite queues (one connection each) reachable from the server's own objects: DynamoDB
   * Local's classes are walked field by field, collections and maps by their elements.
   */
  static List<SQLiteQueue> sqliteQueues(Object root) {
    List<SQLiteQueue> found = new ArrayList<>();
    Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    ArrayDeque<Object> todo = new ArrayDeque<>();
    todo.add(root);
    while (!todo.isEmpty() && seen.size() < 100_000) {
      Object o = todo.poll();
      if (!seen.add(o)) continue;
      if (o instanceof SQLiteQueue) {
        found.add((SQLiteQueue) o);
        continue;
      }
      if (o instanceof Map || o instanceof Collection) {
        try {
          for (Object e : o instanceof Map ? ((Map<?, ?>) o).values() : (Collection<?>) o) {
            if (e != null) todo.add(e);
          }
        } catch (RuntimeException ignored) {
          // a collection that cannot be read this way is not one of the server's
        }
        continue;
      }
      String name = o.getClass().getName();
      if (!name.startsWith("software.amazon.dynamodb.") && !name.startsWith("com.amazonaws.")) continue;
      for (Class<?> c = o.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
        for (Field f : c.getDeclaredFields()) {
          if (f.getType().isPrimitive() || Modifier.isStatic(f.getModifiers())) continue;
          try {
            f.setAccessible(true);
            Object v = f.get(o);
            if (v != null) todo.add(v);
          } catch (RuntimeException | IllegalAccessException ignored) {
            // not ours to read
          }
        }
      }
    }
    return found;
  }
}
