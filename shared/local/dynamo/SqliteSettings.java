import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteJob;
import com.almworks.sqlite4java.SQLiteQueue;
import com.almworks.sqlite4java.SQLiteStatement;

/**
 * The launcher's one patch, `sqlite-settings` (no class is changed; compiled apart from the launcher,
 * which calls applyWhenOpened when this class is there): with a database file (-dbPath), every connection
 * DynamoDB Local opens gets two settings SQLite does not keep in the file: `synchronous = NORMAL` (in
 * write-ahead-log mode a commit is appended to the log before the request is answered, so it survives
 * the process dying, kill -9 included; only an operating-system crash can lose the last commits, as
 * for the SQS emulator's store) instead of FULL, which syncs the disk on every write request, and
 * `temp_store = MEMORY` (statement journals in memory, not a temporary file created and unlinked per
 * write). Together they were a third of the emulator's CPU per alarm (bench:ingest). DynamoDB Local
 * has no option for either; the settings are run as SQL on its own connections, through the job
 * queue each connection serves.
 */
public final class SqliteSettings {
  private SqliteSettings() {}

  /**
   * DynamoDB Local opens its database at the first request: looks for its connections until they are
   * there (the stack's start sends that request and waits for this line), then sets them up. A
   * setting cannot change inside a transaction: a connection found in one is tried again a moment
   * later. The settings are read back, and the result (what the line says) is returned. Gives up
   * after 20 s.
   */
  public static String applyWhenOpened(Object server) throws Exception {
    long deadline = System.currentTimeMillis() + 20_000;
    for (;;) {
      List<SQLiteQueue> queues = sqliteQueues(server);
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
        if (settings.stream().allMatch(x -> x.equals("synchronous=1 temp_store=2")))
          return queues.size() + " database connection(s)";
        throw new IllegalStateException("settings are " + settings);
      }
      if (System.currentTimeMillis() > deadline)
        throw new IllegalStateException(queues.isEmpty() ? "no database connection found" : "its connection stayed in a transaction");
      Thread.sleep(20);
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
   * Local's classes are walked field by field (reading fields, never writing them), collections and
   * maps by their elements.
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
