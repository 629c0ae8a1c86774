import software.amazon.dynamodb.services.local.shared.mapper.DynamoDbObjectMapper;

/**
 * Patch `select-mapper`: DynamoDB Local builds a PartiQL SelectStatementProcessor per request, and
 * each constructs an object mapper of its own for continuation tokens (Jackson mappers are costly to
 * build). Its constructor is changed to take get() below, one mapper shared by all, as Jackson's
 * mappers are thread-safe once configured.
 *
 * Bytecode, because the mapper is built inside the constructor and kept in a final field of a class
 * built per request, with no setting or factory to supply it.
 */
public final class SharedSelectMapper {
  static final String NAME = "select-mapper";
  static final String TARGET = "software.amazon.dynamodb.services.local.shared.partiql.processor.SelectStatementProcessor";
  static final String MAPPER = "software/amazon/dynamodb/services/local/shared/mapper/DynamoDbObjectMapper";

  private static final DynamoDbObjectMapper SHARED = new DynamoDbObjectMapper();

  private SharedSelectMapper() {}

  static void apply(ClassLoader loader) throws Exception {
    ClassPatch patch = new ClassPatch(loader, TARGET);
    patch.replaceConstruction(MAPPER, "SharedSelectMapper", "get");
    PatchedClasses.define(loader, patch);
  }

  /** What the patched constructor takes instead of a new mapper. */
  public static DynamoDbObjectMapper get() {
    return SHARED;
  }
}
