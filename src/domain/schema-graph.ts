// The structure of a JSON Schema (draft 2020-12) as a graph of its subschemas, read by keyword: which
// values are schemas (and not data such as `enum` or `examples`, whatever a property happens to be
// called), which apply to the same place in the payload and which to a part of it, and where each
// `$ref` leads. Event-schema checks walk this graph instead of every nested object, so a property named
// `enum` is a schema like any other, and a reference cycle is found whatever route it takes.

/** A subschema: an object or a boolean schema, found at `at` (a JSON pointer from the root, for messages). */
export interface SchemaNode {
  schema: Record<string, unknown> | boolean;
  at: string;
}

/** Keywords whose value is one schema applied to the same place in the payload as the schema holding it. */
const IN_PLACE = ['not', 'if', 'then', 'else'];
/** Keywords whose value is an array of schemas applied in place. */
const IN_PLACE_LISTS = ['allOf', 'anyOf', 'oneOf'];
/** Keywords whose value is a map of schemas applied in place. */
const IN_PLACE_MAPS = ['dependentSchemas'];
/** Keywords whose value is one schema applied to a part of the payload (an item, a value, a name). */
const DESCENDING = [
  'items',
  'contains',
  'additionalProperties',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
];
const DESCENDING_LISTS = ['prefixItems'];
const DESCENDING_MAPS = ['properties', 'patternProperties'];
/** Keywords that hold schemas only to be referred to. */
const DEFINITIONS = ['$defs', 'definitions'];
/** Keywords whose values are data, never schemas. */
const DATA = new Set(['const', 'enum', 'default', 'examples', 'example']);

const ROOT_BASE = 'https://schema.herald.invalid/root.json';

const isSchema = (value: unknown): value is Record<string, unknown> | boolean =>
  typeof value === 'boolean' || (value !== null && typeof value === 'object' && !Array.isArray(value));

const pointerStep = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** The graph: every subschema reachable by keyword or reference, and the in-place edges between them. */
export class SchemaGraph {
  readonly nodes: SchemaNode[] = [];
  /** Per node, the nodes applied to the same place in the payload (in-place keywords and references). */
  private readonly inPlace = new Map<object | boolean, SchemaNode[]>();
  private readonly byObject = new Map<object, SchemaNode>();
  /** Schema resources by absolute URI (without fragment), and anchors by `URI#name`. */
  private readonly resources = new Map<string, Record<string, unknown> | boolean>();
  private readonly anchors = new Map<string, Record<string, unknown>>();
  private readonly baseOf = new Map<object, string>();
  /** Problems found while reading (a reference into data). */
  readonly problems: string[] = [];

  constructor(root: unknown) {
    if (!isSchema(root)) return;
    this.visit(root, '', ROOT_BASE);
    // References resolve once every resource and anchor is known; a target outside the keyword walk
    // (under a keyword this graph does not know) joins the graph then, and its own references after it.
    for (let i = 0; i < this.nodes.length; i++) this.link(this.nodes[i]!);
  }

  private visit(schema: Record<string, unknown> | boolean, at: string, base: string): SchemaNode {
    if (typeof schema === 'object') {
      const known = this.byObject.get(schema);
      if (known) return known;
    }
    const node: SchemaNode = { schema, at };
    this.nodes.push(node);
    if (typeof schema === 'boolean') return node;
    this.byObject.set(schema, node);
    let here = base;
    if (typeof schema.$id === 'string') {
      here = resolve(schema.$id, base) ?? base;
      this.resources.set(here.split('#')[0]!, schema);
    }
    if (at === '') this.resources.set(here.split('#')[0]!, schema);
    this.baseOf.set(schema, here);
    for (const key of ['$anchor', '$dynamicAnchor'])
      if (typeof schema[key] === 'string') this.anchors.set(`${here.split('#')[0]}#${schema[key]}`, schema);
    const inPlace: SchemaNode[] = [];
    const child = (value: unknown, path: string, applied: boolean) => {
      if (!isSchema(value)) return;
      const node = this.visit(value, `${at}/${path}`, here);
      if (applied) inPlace.push(node);
    };
    for (const key of IN_PLACE) child(schema[key], key, true);
    for (const key of DESCENDING) child(schema[key], key, false);
    for (const [keys, applied] of [
      [IN_PLACE_LISTS, true],
      [DESCENDING_LISTS, false],
    ] as const)
      for (const key of keys) {
        const list = schema[key];
        if (Array.isArray(list)) for (const [i, value] of list.entries()) child(value, `${key}/${i}`, applied);
      }
    for (const [keys, applied] of [
      [IN_PLACE_MAPS, true],
      [DESCENDING_MAPS, false],
      [DEFINITIONS, false],
    ] as const)
      for (const key of keys) {
        const map = schema[key];
        if (isSchema(map) && typeof map === 'object')
          for (const [name, value] of Object.entries(map)) child(value, `${key}/${pointerStep(name)}`, applied);
      }
    this.inPlace.set(schema, inPlace);
    return node;
  }

  /** Adds the targets of a node's `$ref` and `$dynamicRef` to its in-place edges. */
  private link(node: SchemaNode): void {
    const { schema } = node;
    if (typeof schema === 'boolean') return;
    for (const key of ['$ref', '$dynamicRef']) {
      const ref = schema[key];
      if (typeof ref !== 'string') continue;
      const target = this.target(ref, this.baseOf.get(schema)!, `${node.at}/${key}`);
      if (target) this.inPlace.get(schema)!.push(target);
    }
  }

  /** The node a reference leads to, or null when it leads outside the schema (ajv then refuses it). */
  private target(ref: string, base: string, at: string): SchemaNode | null {
    const absolute = resolve(ref, base);
    if (absolute === null) return null;
    const hash = absolute.indexOf('#');
    const resource = this.resources.get(hash < 0 ? absolute : absolute.slice(0, hash));
    if (resource === undefined) return null;
    const fragment = hash < 0 ? '' : decoded(absolute.slice(hash + 1));
    if (fragment === null) return null;
    if (fragment !== '' && !fragment.startsWith('/')) {
      const anchored = this.anchors.get(`${absolute.slice(0, hash)}#${fragment}`);
      return anchored ? this.byObject.get(anchored)! : null;
    }
    let value: unknown = resource;
    const steps = fragment === '' ? [] : fragment.slice(1).split('/');
    for (const step of steps) {
      const key = step.replace(/~1/g, '/').replace(/~0/g, '~');
      if (DATA.has(key) && value !== null && typeof value === 'object' && this.byObject.has(value)) {
        this.problems.push(`${at} ${JSON.stringify(ref)} points into "${key}", which holds data, not schemas`);
        return null;
      }
      if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return null;
      value = (value as Record<string, unknown>)[key];
    }
    if (!isSchema(value)) return null;
    if (typeof value === 'object') {
      const known = this.byObject.get(value);
      if (known) return known;
    }
    return this.visit(value, `${at}→${fragment}`, this.baseOf.get(resource as object) ?? ROOT_BASE);
  }

  /**
   * A chain of subschemas that applies in place back to where it started, as pointers, or null. Such a
   * chain (`{"$ref": "#"}`, or `if` leading back to the root) never reaches a smaller part of the payload,
   * so validating it would recurse until the stack overflows.
   */
  inPlaceCycle(): string[] | null {
    const state = new Map<object | boolean, 'open' | 'done'>();
    const path: SchemaNode[] = [];
    const visit = (node: SchemaNode): string[] | null => {
      const key = node.schema;
      const seen = state.get(key);
      if (seen === 'done') return null;
      if (seen === 'open') return [...path.slice(path.indexOf(node)).map((n) => n.at || '#'), node.at || '#'];
      // Boolean schemas are leaves; `true` and `false` are shared values, never part of a cycle.
      if (typeof key === 'boolean') return null;
      state.set(key, 'open');
      path.push(node);
      for (const next of this.inPlace.get(key) ?? []) {
        const cycle = visit(next);
        if (cycle) return cycle;
      }
      path.pop();
      state.set(key, 'done');
      return null;
    };
    for (const node of this.nodes) {
      const cycle = visit(node);
      if (cycle) return cycle;
    }
    return null;
  }
}

function decoded(fragment: string): string | null {
  try {
    return decodeURIComponent(fragment);
  } catch {
    return null;
  }
}

function resolve(ref: string, base: string): string | null {
  try {
    return new URL(ref, base).href;
  } catch {
    return null;
  }
}
