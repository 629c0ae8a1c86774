import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandles;
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
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteJob;
import com.almworks.sqlite4java.SQLiteQueue;
import com.almworks.sqlite4java.SQLiteStatement;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.partiql.lang.ast.ExprNode;
import org.partiql.lang.syntax.SqlParser;
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
    memoizeStatementParses();
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

  static final String STATEMENT_FUNCTION = "software.amazon.dynamodb.services.local.shared.access.api.dp.PartiQLStatementFunction";

  /**
   * DynamoDB Local parses every PartiQL statement it is sent, and a batch of 25 INSERTs is 25 parses
   * of one text (only the parameters differ): lexing and parsing were a third of its CPU per alarm
   * (bench:ingest, JFR). Its one parse call (PartiQLStatementFunction.parseStatement, calling
   * SqlParser.parseExprNode, a final class) is pointed at StatementMemo.parse instead, which keeps the
   * syntax tree of the last statements by their exact text. The tree is immutable and DynamoDB Local
   * only reads it (the parameters are bound later, per request). The class is defined from its own
   * bytes with that one call changed, before anything loads it; without it (a release whose
   * internals differ) the server runs as shipped, and the line says so. Must run first in main.
   */
  static void memoizeStatementParses() {
    try {
      ClassLoader loader = LocalDynamo.class.getClassLoader();
      byte[] original;
      try (InputStream in = loader.getResourceAsStream(STATEMENT_FUNCTION.replace('.', '/') + ".class")) {
        if (in == null) throw new IllegalStateException(STATEMENT_FUNCTION + " not found");
        original = in.readAllBytes();
      }
      byte[] patched = redirectCall(original,
          "org/partiql/lang/syntax/SqlParser", "parseExprNode", "(Ljava/lang/String;)Lorg/partiql/lang/ast/ExprNode;",
          StatementMemo.class.getName().replace('.', '/'), "parse",
          "(Lorg/partiql/lang/syntax/SqlParser;Ljava/lang/String;)Lorg/partiql/lang/ast/ExprNode;");
      // Verified first in a loader of its own (a class that fails verification would break the server).
      new TrialLoader(loader, STATEMENT_FUNCTION, patched).verify();
      // A class of the same package (its superclass, loaded anyway) lends the right to define it.
      Class<?> sibling = Class.forName(STATEMENT_FUNCTION.replace("PartiQLStatementFunction", "WriteDataPlaneFunction"), false, loader);
      Class<?> defined = MethodHandles.privateLookupIn(sibling, MethodHandles.lookup()).defineClass(patched);
      if (Class.forName(STATEMENT_FUNCTION, false, loader) != defined) throw new IllegalStateException("another definition won");
      System.out.println("LocalDynamo memoizes statement parses");
      System.out.flush();
    } catch (Throwable t) {
      System.out.println("LocalDynamo could not memoize statement parses: " + t);
      System.out.flush();
    }
  }

  /**
   * A throwaway loader to link (and so verify) a patched class before the server's own loader defines
   * it. It defines the patched class and, from the server's own class files, the rest of its package
   * (package-private access needs one loader); anything else comes from the server's loader.
   */
  static final class TrialLoader extends ClassLoader {
    private final String name;
    private final byte[] bytes;
    private final String pkg;

    TrialLoader(ClassLoader parent, String name, byte[] bytes) {
      super(parent);
      this.name = name;
      this.bytes = bytes;
      this.pkg = name.substring(0, name.lastIndexOf('.') + 1);
    }

    @Override
    protected Class<?> loadClass(String n, boolean resolve) throws ClassNotFoundException {
      synchronized (getClassLoadingLock(n)) {
        Class<?> c = findLoadedClass(n);
        if (c == null && n.startsWith(pkg) && n.indexOf('.', pkg.length()) < 0) {
          byte[] b = bytes;
          if (!n.equals(name)) {
            try (InputStream in = getParent().getResourceAsStream(n.replace('.', '/') + ".class")) {
              if (in == null) throw new ClassNotFoundException(n);
              b = in.readAllBytes();
            } catch (IOException e) {
              throw new ClassNotFoundException(n, e);
            }
          }
          c = defineClass(n, b, 0, b.length);
        }
        if (c == null) return super.loadClass(n, resolve);
        if (resolve) resolveClass(c);
        return c;
      }
    }

    /** Links the patched class, which verifies it: a VerifyError or a linkage error throws here. */
    void verify() throws ClassNotFoundException {
      Class.forName(name, true, this);
    }
  }

  /** The syntax trees of the last PartiQL statements parsed (at most 256 texts; then it starts over). */
  public static final class StatementMemo {
    private static final ConcurrentHashMap<String, ExprNode> PARSED = new ConcurrentHashMap<>();

    private StatementMemo() {}

    public static ExprNode parse(SqlParser parser, String statement) {
      ExprNode hit = PARSED.get(statement);
      if (hit != null) return hit;
      ExprNode tree = parser.parseExprNode(statement); // a statement that does not parse throws, and is not kept
      if (PARSED.size() >= 256) PARSED.clear();
      PARSED.put(statement, tree);
      return tree;
    }
  }

  /**
   * A class file's bytes with its one `invokevirtual owner.name desc` made an
   * `invokestatic newOwner.newName newDesc` (newDesc takes the receiver first, so the operand stack is
   * the same and no stack map changes). The new method reference is appended to the constant pool.
   * Throws unless that call occurs exactly once.
   */
  static byte[] redirectCall(byte[] cls, String owner, String name, String desc, String newOwner, String newName, String newDesc) {
    ByteBuffer b = ByteBuffer.wrap(cls);
    if (b.getInt(0) != 0xCAFEBABE) throw new IllegalStateException("not a class file");
    int count = b.getShort(8) & 0xffff;
    String[] utf8 = new String[count];
    int[] tag = new int[count];
    int[] first = new int[count];
    int[] second = new int[count];
    int pos = 10;
    for (int i = 1; i < count; i++) {
      tag[i] = cls[pos] & 0xff;
      switch (tag[i]) {
        case 1 -> {
          int len = b.getShort(pos + 1) & 0xffff;
          utf8[i] = new String(cls, pos + 3, len, java.nio.charset.StandardCharsets.UTF_8);
          pos += 3 + len;
        }
        case 3, 4 -> pos += 5;
        case 5, 6 -> {
          pos += 9;
          i++;
        }
        case 7, 8, 16, 19, 20 -> {
          first[i] = b.getShort(pos + 1) & 0xffff;
          pos += 3;
        }
        case 9, 10, 11, 12, 17, 18 -> {
          first[i] = b.getShort(pos + 1) & 0xffff;
          second[i] = b.getShort(pos + 3) & 0xffff;
          pos += 5;
        }
        case 15 -> pos += 4;
        default -> throw new IllegalStateException("unknown constant tag " + tag[i]);
      }
    }
    int target = 0;
    for (int i = 1; i < count; i++) {
      if (tag[i] != 10) continue;
      int nat = second[i];
      if (owner.equals(utf8[first[first[i]]]) && name.equals(utf8[first[nat]]) && desc.equals(utf8[second[nat]])) target = i;
    }
    if (target == 0) throw new IllegalStateException("no reference to " + owner + "." + name);
    int at = -1;
    for (int p = pos; p + 2 < cls.length; p++) {
      if ((cls[p] & 0xff) == 0xb6 && (b.getShort(p + 1) & 0xffff) == target) {
        if (at >= 0) throw new IllegalStateException(owner + "." + name + " is called more than once");
        at = p;
      }
    }
    if (at < 0) throw new IllegalStateException(owner + "." + name + " is not called");
    java.io.ByteArrayOutputStream added = new java.io.ByteArrayOutputStream();
    java.io.DataOutputStream out = new java.io.DataOutputStream(added);
    try {
      out.writeByte(1);
      out.writeUTF(newOwner); // count
      out.writeByte(7);
      out.writeShort(count); // count + 1
      out.writeByte(1);
      out.writeUTF(newName); // count + 2
      out.writeByte(1);
      out.writeUTF(newDesc); // count + 3
      out.writeByte(12);
      out.writeShort(count + 2);
      out.writeShort(count + 3); // count + 4
      out.writeByte(10);
      out.writeShort(count + 1);
      out.writeShort(count + 4); // count + 5
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    byte[] extra = added.toByteArray();
    ByteBuffer result = ByteBuffer.allocate(cls.length + extra.length);
    result.put(cls, 0, 8).putShort((short) (count + 6)).put(cls, 10, pos - 10).put(extra).put(cls, pos, cls.length - pos);
    byte[] patched = result.array();
    int moved = at + extra.length;
    patched[moved] = (byte) 0xb8;
    patched[moved + 1] = (byte) ((count + 5) >> 8);
    patched[moved + 2] = (byte) (count + 5);
    return patched;
  }

  /** The classes whose object mapper (a static MAPPER) parses table descriptions on the way to an item. */
  static final String[] SCHEMA_READERS = {
    "software.amazon.dynamodb.services.local.shared.access.sqlite.SQLiteDBAccess",
    "software.amazon.dynamodb.services.local.shared.access.sqlite.SQLiteDBAccessJob",
  };

  /**
   * DynamoDB Local reads its table's description from its database and parses it (JSON, with every
   * index) on every item it reads or writes: that parsing was about a third of its database thread's
   * CPU per alarm (bench:ingest). The object mappers it parses with (one per class that reads
   * descriptions: SQLiteDBAccess, and SQLiteDBAccessJob on the way of a batch's PartiQL INSERTs) are
   * swapped for one that keeps the last descriptions it parsed, by their exact bytes: a changed table
   * (UpdateTable, a TTL setting) has different bytes and is parsed afresh. Without it (a release whose
   * internals differ) the server runs as shipped, and the line says so.
   */
  static void memoizeTableSchemas() {
    try {
      Class<?> schema = Class.forName("software.amazon.dynamodb.services.local.shared.access.sqlite.TableSchemaInfo");
      SchemaMemoMapper memo = new SchemaMemoMapper(schema);
      Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
      Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
      theUnsafe.setAccessible(true);
      Object unsafe = theUnsafe.get(null);
      Method base = unsafeClass.getMethod("staticFieldBase", Field.class);
      Method offset = unsafeClass.getMethod("staticFieldOffset", Field.class);
      Method put = unsafeClass.getMethod("putObjectVolatile", Object.class, long.class, Object.class);
      for (String reader : SCHEMA_READERS) {
        Field mapper = Class.forName(reader).getDeclaredField("MAPPER");
        if (!DynamoDbObjectMapper.class.equals(mapper.getType()))
          throw new IllegalStateException(reader + ".MAPPER is a " + mapper.getType());
        put.invoke(unsafe, base.invoke(unsafe, mapper), offset.invoke(unsafe, mapper), memo);
        mapper.setAccessible(true);
        if (mapper.get(null) != memo) throw new IllegalStateException(reader + ".MAPPER not replaced");
      }
      System.out.println("LocalDynamo memoizes table descriptions");
      System.out.flush();
    } catch (Throwable t) {
      System.out.println("LocalDynamo could not memoize table descriptions: " + t);
      System.out.flush();
    }
  }

  /**
   * DynamoDB Local's mapper, parsing each table description's bytes once (the last 32 kept, most
   * recently used first). A description is found by comparing bytes (length, then Arrays.equals, which
   * compares words at a time) with the few kept: no hash of the whole description and no copy per
   * item, which with one table is a single comparison.
   */
  static final class SchemaMemoMapper extends DynamoDbObjectMapper {
    private static final long serialVersionUID = 1L;
    private final transient Class<?> schema;
    /** Pairs of (description bytes, parsed description), most recently used first; replaced, never changed. */
    private transient volatile Object[][] recent = new Object[0][];

    SchemaMemoMapper(Class<?> schema) {
      this.schema = schema;
    }

    @Override
    public <T> T readValue(byte[] src, Class<T> type) throws IOException {
      if (type != schema) return super.readValue(src, type);
      Object[][] kept = recent;
      for (int i = 0; i < kept.length; i++) {
        byte[] bytes = (byte[]) kept[i][0];
        if (bytes.length == src.length && Arrays.equals(bytes, src)) {
          if (i > 0) remember(kept[i]);
          return type.cast(kept[i][1]);
        }
      }
      Object parsed = super.readValue(src, type);
      remember(new Object[] {src.clone(), parsed});
      return type.cast(parsed);
    }

    private synchronized void remember(Object[] entry) {
      Object[][] kept = recent;
      List<Object[]> next = new ArrayList<>(kept.length + 1);
      next.add(entry);
      for (Object[] e : kept) if (e != entry && !Arrays.equals((byte[]) e[0], (byte[]) entry[0]) && next.size() < 32) next.add(e);
      recent = next.toArray(new Object[0][]);
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
