import assert from 'node:assert/strict';

// Reads /metrics as Prometheus does: the text exposition format, parsed by a small line parser (each
// sample line is `name{label="value",...} number`; `#` lines are HELP and TYPE).

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  samples: Sample[];
  /** The TYPE line of each metric family. */
  types: Map<string, string>;
  /** The value of the one sample of `name` whose labels include `labels` (0 when there is none). */
  value(name: string, labels?: Record<string, string>): number;
  /** The sum over every sample of `name` whose labels include `labels`. */
  sum(name: string, labels?: Record<string, string>): number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const match = SAMPLE.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name!] = value!.replace(/\\(.)/g, '$1');
    // NaN is a value like any other in the format (a mean over no samples).
    const text = match[3]!;
    const value = /^nan$/i.test(text) ? Number.NaN : text === '+Inf' ? Number.POSITIVE_INFINITY : Number(text);
    assert.ok(!Number.isNaN(value) || /^nan$/i.test(text), `not a number: ${line}`);
    samples.push({ name: match[1]!, labels, value });
  }
  const matching = (name: string, labels: Record<string, string>) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    samples,
    types,
    value(name, labels = {}) {
      const found = matching(name, labels);
      assert.ok(found.length <= 1, `${found.length} samples of ${name} ${JSON.stringify(labels)}`);
      return found[0]?.value ?? 0;
    },
    sum(name, labels = {}) {
      return matching(name, labels).reduce((total, s) => total + s.value, 0);
    },
  };
}

/** GETs `<baseUrl>/metrics` (with the bearer token when given), checks it is the text format, and parses it. */
export async function scrape(baseUrl: string, token?: string): Promise<Scrape> {
  const response = await fetch(`${baseUrl}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseMetrics(text);
}
