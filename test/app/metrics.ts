/**
 * Reading `/metrics` as Prometheus would: the text format parsed by parse-prometheus-text-format
 * (prom2json's shape), and one sample looked up by name and labels.
 */
import { createRequire } from 'node:module';

/** One sample of a family; histograms carry their buckets, count and sum instead of a value. */
export interface MetricSample {
  labels?: Record<string, string>;
  value?: string;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}

/** A metric family as the parser returns it. */
export interface MetricFamily {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  metrics: MetricSample[];
}

// A CommonJS module without types: required the same way under vitest, tsx and plain node.
const parsePrometheusTextFormat = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => MetricFamily[];

/** Parses Prometheus' text format; throws when it is not. */
export function parseMetrics(text: string): MetricFamily[] {
  return parsePrometheusTextFormat(text);
}

/** GETs `url` and parses it; fails on a non-200 answer or a content type that is not the text format. */
export async function scrape(url: string): Promise<{ families: MetricFamily[]; text: string }> {
  const response = await fetch(url);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${text.slice(0, 200)}`);
  const type = response.headers.get('content-type') ?? '';
  if (!type.startsWith('text/plain')) throw new Error(`GET ${url}: content type ${type}, not Prometheus' text format`);
  return { families: parseMetrics(text), text };
}

/** The sample of `name` whose labels include `labels`; undefined when there is none. */
export function sample(families: readonly MetricFamily[], name: string, labels: Record<string, string> = {}): MetricSample | undefined {
  const family = families.find((f) => f.name === name);
  return family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

/** The numeric value (or histogram count) of a sample; 0 when the sample is absent. */
export function value(families: readonly MetricFamily[], name: string, labels: Record<string, string> = {}): number {
  const found = sample(families, name, labels);
  return Number(found?.value ?? found?.count ?? 0);
}

/**
 * The `_count` of a labelled histogram, read from the text: parse-prometheus-text-format folds a
 * histogram's samples into one and drops their labels (it handles unlabelled histograms only),
 * so per-label counts are read from the `<name>_count{…}` lines themselves. 0 when absent.
 */
export function histogramCount(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${name}_count\\{([^}]*)\\} (\\S+)$`).exec(line);
    if (!match) continue;
    const found = Object.fromEntries([...(match[1] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[2]);
  }
  return 0;
}
