/**
 * The schemas of the routes' success `data`, from the TypeScript types the handlers return.
 *
 * Every handler made by `httpHandler` carries the type of the `data` it answers with (`DataOf<typeof
 * handler>`, shared/http/handler.ts): the type its use case returns. This reads that type with the
 * TypeScript compiler and has ts-json-schema-generator turn the named types it reaches into JSON
 * Schemas (draft-07, which json-schema-migrate brings to 2020-12, the dialect of OpenAPI 3.1). Each
 * named type becomes one component of the document; a route's `data` is a `$ref` to its type, or to
 * one of several (a union). A route whose data type has no name is an error: name the use case's
 * return type (a `responses.ts` of its domain folder holds them).
 */
import { join, relative } from 'node:path';
import migrate from 'json-schema-migrate';
import {
  type CompletedConfig,
  createFormatter,
  createParser,
  DEFAULT_CONFIG,
  SchemaGenerator,
} from 'ts-json-schema-generator';
import ts from 'typescript';

type Json = Record<string, unknown>;

/** The data schema of one route: a `$ref` to a component, or `anyOf` of several. */
export type DataSchema = Json;

export interface ResponseSchemas {
  /** By route key (`GET /health`). */
  data: Map<string, DataSchema>;
  /** Component schemas by name, each a JSON Schema 2020-12 whose `$ref`s point at components. */
  components: Record<string, Json>;
}

/** A route whose `data` to describe: its key and its handler module (absolute path). */
export interface DataRoute {
  key: string;
  file: string;
}

const COMPONENT_NAME = /^[A-Za-z0-9._-]+$/;
const REF = '#/components/schemas/';

function compilerProgram(root: string, files: string[]): ts.Program {
  const configFile = join(root, 'tsconfig.json');
  const parsed = ts.getParsedCommandLineOfConfigFile(
    configFile,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!parsed) throw new Error(`cannot read ${configFile}`);
  return ts.createProgram(files, { ...parsed.options, noEmit: true });
}

/** The declarations of the named type(s) of `type`: its alias or interface, or each of a union's. */
function declarationsOf(type: ts.Type, where: string): ts.Declaration[] {
  const named = (t: ts.Type) =>
    (t.aliasSymbol ?? t.getSymbol())?.declarations?.find(
      (d) => ts.isInterfaceDeclaration(d) || ts.isTypeAliasDeclaration(d),
    );
  const own = named(type);
  if (own) return [own];
  const members = type.isUnion() ? type.types.map(named) : [];
  if (members.length && members.every((d) => d !== undefined)) return members as ts.Declaration[];
  throw new Error(
    `${where}: the data the handler answers with has no named type: give its use case a named, exported return type (the domain folder's responses.ts)`,
  );
}

/** The type of `data` the module's `handler` answers with (the `Answers` brand of httpHandler). */
function dataTypeOf(checker: ts.TypeChecker, source: ts.SourceFile, where: string): ts.Type {
  const module = checker.getSymbolAtLocation(source);
  const handler = module && checker.getExportsOfModule(module).find((s) => s.name === 'handler');
  if (!handler) throw new Error(`${where}: ${source.fileName} exports no handler`);
  const brand = checker
    .getTypeOfSymbol(handler)
    .getProperties()
    .find((p) => String(p.escapedName).startsWith('__@answers'));
  if (!brand) throw new Error(`${where}: its handler is not typed by httpHandler (no data type)`);
  return checker.getNonNullableType(checker.getTypeOfSymbol(brand));
}

/**
 * Names declared by more than one exported type of the project: ts-json-schema-generator names a
 * definition by its type's name alone, so two such types would share (and garble) one component.
 */
function ambiguousNames(program: ts.Program): Map<string, string[]> {
  const files = new Map<string, string[]>();
  for (const source of program.getSourceFiles()) {
    if (source.isDeclarationFile || source.fileName.includes('/node_modules/')) continue;
    for (const statement of source.statements) {
      if (!(ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement))) continue;
      if (!statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
      const name = statement.name.text;
      files.set(name, [...(files.get(name) ?? []), source.fileName]);
    }
  }
  return new Map([...files].filter(([, where]) => where.length > 1));
}

/** `value` with every `#/definitions/<name>` reference pointing at the component of that name. */
function relocate(value: unknown, names: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => relocate(v, names));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/definitions/')) {
        const name = names.get(decodeURIComponent(v.slice('#/definitions/'.length)));
        if (!name) throw new Error(`dangling reference ${v}`);
        return [k, `${REF}${name}`];
      }
      return [k, relocate(v, names)];
    }),
  );
}

/** A component name for a definition name (generic instances such as `Omit<A,"b">` are spelled out). */
function componentName(definition: string): string {
  if (COMPONENT_NAME.test(definition)) return definition;
  return definition
    .replace(/[<>,|"'()\s]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
}

/** The data schemas of `routes`, read from their handler modules' types. */
export function responseSchemas(root: string, routes: DataRoute[]): ResponseSchemas {
  const program = compilerProgram(root, [...new Set(routes.map((r) => r.file))]);
  const checker = program.getTypeChecker();
  const roots = routes.map((r) => {
    const source = program.getSourceFile(r.file);
    if (!source) throw new Error(`${r.key}: ${r.file} is not in the program`);
    return { route: r, declarations: declarationsOf(dataTypeOf(checker, source, r.key), r.key) };
  });
  const config: CompletedConfig = {
    ...DEFAULT_CONFIG,
    tsProgram: program,
    expose: 'export',
    topRef: true,
    jsDoc: 'extended',
    sortProps: false,
    additionalProperties: false,
    functions: 'fail',
    skipTypeCheck: true,
    encodeRefs: false,
  };
  const generator = new SchemaGenerator(
    program,
    createParser(program, config),
    createFormatter(config),
    config,
  );
  const declarations = [...new Set(roots.flatMap((r) => r.declarations))];
  const schema = generator.createSchemaFromNodes(declarations) as { definitions?: Record<string, Json> };
  const definitions = schema.definitions ?? {};
  const ambiguous = ambiguousNames(program);
  const names = new Map<string, string>();
  const taken = new Map<string, string>();
  for (const definition of Object.keys(definitions)) {
    const clash = ambiguous.get(definition.split('<')[0]);
    if (clash) {
      throw new Error(
        `the response type ${definition} is declared in ${clash.map((f) => relative(root, f)).join(' and ')}: give one another name`,
      );
    }
    const name = componentName(definition);
    const other = taken.get(name);
    if (other) throw new Error(`two response types make the component ${name}: ${other} and ${definition}`);
    taken.set(name, definition);
    names.set(definition, name);
  }
  const components: Record<string, Json> = {};
  for (const [definition, s] of Object.entries(definitions)) {
    const migrated = { ...(s as Json) };
    migrate.draft2020(migrated);
    delete migrated.$schema;
    components[names.get(definition) as string] = relocate(migrated, names) as Json;
  }
  const nameOf = (d: ts.Declaration) => {
    const n = (d as ts.InterfaceDeclaration | ts.TypeAliasDeclaration).name.text;
    if (!names.has(n)) throw new Error(`${n}: no schema was made for it (is it exported?)`);
    return names.get(n) as string;
  };
  const data = new Map<string, DataSchema>();
  for (const { route, declarations: ds } of roots) {
    const refs = ds.map((d) => ({ $ref: `${REF}${nameOf(d)}` }));
    data.set(route.key, refs.length === 1 ? refs[0] : { anyOf: refs });
  }
  return { data, components };
}
