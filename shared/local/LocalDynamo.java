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
  static final String SELECT_PROCESSOR = "software.amazon.dynamodb.services.local.shared.partiql.processor.SelectStatementProcessor";
  static final String OBJECT_MAPPER = "software/amazon/dynamodb/services/local/shared/mapper/DynamoDbObjectMapper";

  /**
   * DynamoDB Local builds its PartiQL machinery anew for every BatchExecuteStatement and parses every
   * statement, though a batch of 25 INSERTs is 25 copies of one text (only the parameters differ):
   * lexing and parsing were a third of its CPU per alarm, and a new object mapper per request (one
   * for SELECT continuation tokens) another tenth (bench:ingest, JFR). Two of its classes are
   * defined from their own bytes with one call changed, before anything loads them:
   * - PartiQLStatementFunction.parseStatement calls StatementMemo.parse instead of
   *   SqlParser.parseExprNode (a final class), which keeps the syntax tree of the last statements by
   *   their exact text. A tree is immutable and DynamoDB Local only reads it (the parameters are
   *   bound later, per request);
   * - SelectStatementProcessor's constructor takes SharedMapper.get() (one mapper, thread-safe once
   *   configured, as Jackson's are) instead of constructing its own.
   * Each patched class is verified in a loader of its own first. A release whose internals differ
   * runs the class a patch does not fit as shipped, and a line per patch says which. Must run first
   * in main.
   */
  static void memoizeStatementParses() {
    ClassLoader loader = LocalDynamo.class.getClassLoader();
    try {
      ClassPatch parse = new ClassPatch(classBytes(loader, STATEMENT_FUNCTION));
      parse.redirectCall("org/partiql/lang/syntax/SqlParser", "parseExprNode",
          "(Ljava/lang/String;)Lorg/partiql/lang/ast/ExprNode;",
          StatementMemo.class.getName().replace('.', '/'), "parse",
          "(Lorg/partiql/lang/syntax/SqlParser;Ljava/lang/String;)Lorg/partiql/lang/ast/ExprNode;");
      verifyAndDefine(loader, STATEMENT_FUNCTION, parse);
      System.out.println("LocalDynamo memoizes statement parses");
    } catch (Throwable t) {
      System.out.println("LocalDynamo could not memoize statement parses: " + t);
    }
    try {
      ClassPatch select = new ClassPatch(classBytes(loader, SELECT_PROCESSOR));
      select.replaceConstruction(OBJECT_MAPPER, SharedMapper.class.getName().replace('.', '/'), "get");
      verifyAndDefine(loader, SELECT_PROCESSOR, select);
      System.out.println("LocalDynamo shares one mapper among SELECT processors");
    } catch (Throwable t) {
      System.out.println("LocalDynamo builds a mapper per SELECT processor, as shipped: " + t);
    }
    System.out.flush();
  }

  static byte[] classBytes(ClassLoader loader, String name) throws IOException {
    try (InputStream in = loader.getResourceAsStream(name.replace('.', '/') + ".class")) {
      if (in == null) throw new IllegalStateException(name + " not found");
      return in.readAllBytes();
    }
  }

  /**
   * Verifies a patched class in a loader of its own (a class failing verification in the server's
   * loader would break the server), then defines it in the server's loader.
   */
  static void verifyAndDefine(ClassLoader loader, String name, ClassPatch patch) throws Exception {
    byte[] bytes = patch.bytes();
    new TrialLoader(loader, name, bytes).verify();
    // Its superclass (loaded anyway, before it) lends the right, if it is of the same package.
    String superclass = patch.superclass();
    if (!superclass.substring(0, superclass.lastIndexOf('.')).equals(name.substring(0, name.lastIndexOf('.'))))
      throw new IllegalStateException(name + ": its superclass is of another package");
    Class<?> lender = Class.forName(superclass, false, loader);
    Class<?> defined = MethodHandles.privateLookupIn(lender, MethodHandles.lookup()).defineClass(bytes);
    if (Class.forName(name, false, loader) != defined) throw new IllegalStateException(name + ": another definition won");
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
            try {
              b = classBytes(getParent(), n);
            } catch (IOException | IllegalStateException e) {
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

  /** The one object mapper SelectStatementProcessor instances share. */
  public static final class SharedMapper {
    private static final DynamoDbObjectMapper MAPPER = new DynamoDbObjectMapper();

    private SharedMapper() {}

    public static DynamoDbObjectMapper get() {
      return MAPPER;
    }
  }

  /**
   * One class file's bytes, changed in place of one instruction sequence at a time, with the method
   * references that needs appended to its constant pool. Each change finds its sequence exactly once
   * in the bytes after the pool (or throws) and keeps the operand stack as it was, so no stack map
   * changes.
   */
  static final class ClassPatch {
    private final byte[] cls;
    private final ByteBuffer b;
    private final int count;
    private final int poolEnd;
    private final String[] utf8;
    private final int[] tag;
    private final int[] first;
    private final int[] second;
    private final java.io.ByteArrayOutputStream added = new java.io.ByteArrayOutputStream();
    private int next;
    private final byte[] body;

    ClassPatch(byte[] cls) {
      this.cls = cls;
      b = ByteBuffer.wrap(cls);
      if (b.getInt(0) != 0xCAFEBABE) throw new IllegalStateException("not a class file");
      count = b.getShort(8) & 0xffff;
      next = count;
      utf8 = new String[count];
      tag = new int[count];
      first = new int[count];
      second = new int[count];
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
      poolEnd = pos;
      body = Arrays.copyOfRange(cls, pos, cls.length);
    }

    /** `invokevirtual owner.name desc` becomes `invokestatic newOwner.newName newDesc` (receiver first). */
    void redirectCall(String owner, String name, String desc, String newOwner, String newName, String newDesc) {
      int ref = methodRef(owner, name, desc);
      int at = findOnce(new byte[] {(byte) 0xb6, (byte) (ref >> 8), (byte) ref}, owner + "." + name);
      put(at, (byte) 0xb8, addMethodRef(newOwner, newName, newDesc));
    }

    /** `new type; dup; invokespecial type.<init>()V` becomes `invokestatic newOwner.newName()type` and nops. */
    void replaceConstruction(String type, String newOwner, String newName) {
      int classRef = 0;
      for (int i = 1; i < count; i++) if (tag[i] == 7 && type.equals(utf8[first[i]])) classRef = i;
      if (classRef == 0) throw new IllegalStateException("no reference to " + type);
      int init = methodRef(type, "<init>", "()V");
      int at = findOnce(new byte[] {(byte) 0xbb, (byte) (classRef >> 8), (byte) classRef, 0x59,
          (byte) 0xb7, (byte) (init >> 8), (byte) init}, "new " + type);
      put(at, (byte) 0xb8, addMethodRef(newOwner, newName, "()L" + type + ";"));
      Arrays.fill(body, at + 3, at + 7, (byte) 0); // nop
    }

    /** The superclass's binary name (super_class follows access_flags and this_class). */
    String superclass() {
      return utf8[first[b.getShort(poolEnd + 4) & 0xffff]].replace('/', '.');
    }

    byte[] bytes() {
      byte[] extra = added.toByteArray();
      return ByteBuffer.allocate(cls.length + extra.length)
          .put(cls, 0, 8).putShort((short) next).put(cls, 10, poolEnd - 10).put(extra).put(body)
          .array();
    }

    private int methodRef(String owner, String name, String desc) {
      for (int i = 1; i < count; i++) {
        if (tag[i] != 10) continue;
        int nat = second[i];
        if (owner.equals(utf8[first[first[i]]]) && name.equals(utf8[first[nat]]) && desc.equals(utf8[second[nat]])) return i;
      }
      throw new IllegalStateException("no reference to " + owner + "." + name + desc);
    }

    private int findOnce(byte[] pattern, String what) {
      int at = -1;
      outer:
      for (int p = 0; p + pattern.length <= body.length; p++) {
        for (int k = 0; k < pattern.length; k++) if (body[p + k] != pattern[k]) continue outer;
        if (at >= 0) throw new IllegalStateException(what + " occurs more than once");
        at = p;
      }
      if (at < 0) throw new IllegalStateException(what + " does not occur");
      return at;
    }

    private void put(int at, byte opcode, int ref) {
      body[at] = opcode;
      body[at + 1] = (byte) (ref >> 8);
      body[at + 2] = (byte) ref;
    }

    /** Appends Utf8 owner, Class, Utf8 name, Utf8 desc, NameAndType, Methodref; returns the Methodref. */
    private int addMethodRef(String owner, String name, String desc) {
      java.io.DataOutputStream out = new java.io.DataOutputStream(added);
      int base = next;
      try {
        out.writeByte(1);
        out.writeUTF(owner);
        out.writeByte(7);
        out.writeShort(base);
        out.writeByte(1);
        out.writeUTF(name);
        out.writeByte(1);
        out.writeUTF(desc);
        out.writeByte(12);
        out.writeShort(base + 2);
        out.writeShort(base + 3);
        out.writeByte(10);
        out.writeShort(base + 1);
        out.writeShort(base + 4);
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
      next = base + 6;
      if (next > 0xffff) throw new IllegalStateException("constant pool full");
      return base + 5;
    }
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
   * DynamoDB Local's mapper, parsing each table description's bytes once (the last 32 parsed kept).
   * A description is found by comparing bytes (Arrays.equals: length, then words at a time) with the
   * few kept: no hash of the whole description and no copy per item, which with one table is a single
   * comparison.
   */
  static final class SchemaMemoMapper extends DynamoDbObjectMapper {
    private static final long serialVersionUID = 1L;
    private final transient Class<?> schema;
    /** Pairs of (description bytes, parsed description), the latest parsed first; replaced, never changed. */
    private transient volatile Object[][] recent = new Object[0][];

    SchemaMemoMapper(Class<?> schema) {
      this.schema = schema;
    }

    @Override
    public <T> T readValue(byte[] src, Class<T> type) throws IOException {
      if (type != schema) return super.readValue(src, type);
      for (Object[] kept : recent) {
        if (Arrays.equals((byte[]) kept[0], src)) return type.cast(kept[1]);
      }
      Object parsed = super.readValue(src, type);
      remember(new Object[] {src.clone(), parsed});
      return type.cast(parsed);
    }

    /**
     * DynamoDB Local changes a parsed description in place (a TTL setting, an index) before it writes
     * it back: a description being written is forgotten with all the others, so nothing parsed from
     * bytes that are no longer the table's stays in use.
     */
    @Override
    public byte[] writeValueAsBytes(Object value) throws com.fasterxml.jackson.core.JsonProcessingException {
      if (schema.isInstance(value)) forget();
      return super.writeValueAsBytes(value);
    }

    @Override
    public String writeValueAsString(Object value) throws com.fasterxml.jackson.core.JsonProcessingException {
      if (schema.isInstance(value)) forget();
      return super.writeValueAsString(value);
    }

    private synchronized void forget() {
      recent = new Object[0][];
    }

    /** Keeps a description just parsed first, with at most 31 others. */
    private synchronized void remember(Object[] entry) {
      Object[][] kept = recent;
      Object[][] next = new Object[Math.min(kept.length + 1, 32)][];
      next[0] = entry;
      System.arraycopy(kept, 0, next, 1, next.length - 1);
      recent = next;
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
