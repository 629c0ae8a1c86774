import java.util.concurrent.ConcurrentHashMap;
import org.partiql.lang.ast.ExprNode;
import org.partiql.lang.syntax.SqlParser;

/**
 * Patch `statement-memo`: DynamoDB Local parses every PartiQL statement of every request, though a
 * BatchExecuteStatement of 25 INSERTs is 25 copies of one text (only the parameters differ); lexing
 * and parsing were a third of its CPU per alarm (bench:ingest, JFR). PartiQLStatementFunction's
 * parseStatement is changed to call parse() below instead of SqlParser.parseExprNode, which keeps the
 * syntax tree of the last statements by their exact text. A tree is immutable and DynamoDB Local only
 * reads it (the parameters are bound later, per request).
 *
 * Bytecode, because no supported way reaches the call: the parser is a final class held in a static
 * final field, and although parseStatement is a protected method, the objects that have it are built
 * per request inside DynamoDB Local's client, which a private final field of the server holds; a
 * subclass would need the server's final fields rewritten and the client's private state copied.
 */
public final class StatementMemo {
  static final String NAME = "statement-memo";
  static final String TARGET = "software.amazon.dynamodb.services.local.shared.access.api.dp.PartiQLStatementFunction";

  /** Texts kept at most; then it starts over. */
  private static final int KEPT = 256;
  private static final ConcurrentHashMap<String, ExprNode> PARSED = new ConcurrentHashMap<>();

  private StatementMemo() {}

  static void apply(ClassLoader loader) throws Exception {
    ClassPatch patch = new ClassPatch(loader, TARGET);
    patch.redirectCall("org/partiql/lang/syntax/SqlParser", "parseExprNode",
        "(Ljava/lang/String;)Lorg/partiql/lang/ast/ExprNode;",
        "StatementMemo", "parse",
        "(Lorg/partiql/lang/syntax/SqlParser;Ljava/lang/String;)Lorg/partiql/lang/ast/ExprNode;");
    PatchedClasses.define(loader, patch);
  }

  /** What the patched parseStatement calls: the tree of `statement`, parsed once. */
  public static ExprNode parse(SqlParser parser, String statement) {
    ExprNode hit = PARSED.get(statement);
    if (hit != null) return hit;
    ExprNode tree = parser.parseExprNode(statement); // a statement that does not parse throws, and is not kept
    if (PARSED.size() >= KEPT) PARSED.clear();
    PARSED.put(statement, tree);
    return tree;
  }
}
