import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import com.fasterxml.jackson.core.JsonProcessingException;
import software.amazon.dynamodb.services.local.shared.mapper.DynamoDbObjectMapper;

/**
 * Patch `table-memo`: DynamoDB Local reads its table's description from its database and parses it
 * (JSON, with every index) on every item it reads or writes: that parsing was about a third of its
 * database thread's CPU per alarm (bench:ingest). The classes that parse descriptions (SQLiteDBAccess,
 * and SQLiteDBAccessJob on the way of a batch's PartiQL INSERTs) each build their object mapper in
 * their static initializer and keep it in a private static final field. Their initializers are
 * changed to take mapper() below instead: one mapper that keeps the last descriptions it parsed, by
 * their exact bytes. A changed table (UpdateTable, a TTL setting) has different bytes and is parsed
 * afresh.
 *
 * Bytecode, because a static final field cannot be set by any supported means once its class is
 * initialized, and neither class offers a setting, a factory or a way to subclass what reads through
 * it; the initializers are changed before the classes load, so nothing is written behind the JVM's
 * back. Both classes are verified before either is defined: they share the memo, so either both or
 * neither use it.
 */
public final class TableDescriptionMemo {
  static final String NAME = "table-memo";
  static final String PACKAGE = "software.amazon.dynamodb.services.local.shared.access.sqlite.";
  static final String MAPPER = "software/amazon/dynamodb/services/local/shared/mapper/DynamoDbObjectMapper";

  private static volatile SchemaMemoMapper memo;

  private TableDescriptionMemo() {}

  static void apply(ClassLoader loader) throws Exception {
    memo = new SchemaMemoMapper(Class.forName(PACKAGE + "TableSchemaInfo", false, loader));
    ClassPatch access = new ClassPatch(loader, PACKAGE + "SQLiteDBAccess");
    ClassPatch job = new ClassPatch(loader, PACKAGE + "SQLiteDBAccessJob");
    for (ClassPatch patch : List.of(access, job)) patch.replaceConstruction(MAPPER, "TableDescriptionMemo", "mapper");
    // The job first: defining SQLiteDBAccess verifies it, which loads the job class. SQLiteDBAccess's
    // superclass is Object: a data class of its package lends it the access instead.
    PatchedClasses.define(loader, List.of(job, access), List.of(job.superclass(), PACKAGE + "TableSchemaInfo"));
  }

  /** What the patched static initializers take instead of a new mapper. */
  public static DynamoDbObjectMapper mapper() {
    SchemaMemoMapper m = memo;
    return m != null ? m : new DynamoDbObjectMapper();
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
    public byte[] writeValueAsBytes(Object value) throws JsonProcessingException {
      if (schema.isInstance(value)) forget();
      return super.writeValueAsBytes(value);
    }

    @Override
    public String writeValueAsString(Object value) throws JsonProcessingException {
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
}
