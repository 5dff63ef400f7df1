/**
 * Imported documents as YAML text, the way the example specs are written: flow lists for tags and
 * the cluster's lists, block lists for SSH keys, the notes as comments above each document. The
 * same documents always give the same bytes. No I/O.
 */
import { Document, isMap, isSeq, visit } from 'yaml';
import type { GuestDocument } from './guest-document.js';

/** A `kind: Cluster` document written for a cluster the specs do not describe yet. */
export interface ClusterDocumentText {
  kind: 'Cluster';
  name: string;
  vmids: { lower: number; upper: number };
  ownerTag: string;
  nodes: string[];
  storages?: string[];
  bridges?: string[];
  prune: false;
}

/** A `kind: Pool` document for a pool the imported guests are members of. */
export interface PoolDocumentText {
  kind: 'Pool';
  name: string;
  cluster: string;
  comment?: string;
}

/** Keys whose lists a person writes on one line. */
const FLOW_LISTS = new Set(['tags', 'ignore', 'nodes', 'storages', 'bridges', 'nameserver', 'searchdomain', 'guests']);

/** One document with its notes as a comment above it; `style` sets the flow of nodes `flowMaps` does not reach. */
function renderOne(value: object, notes: readonly string[], flowMaps: ReadonlySet<string>, style?: (doc: Document) => void): string {
  const doc = new Document(value);
  style?.(doc);
  visit(doc, {
    Pair(_, pair) {
      const key = String((pair.key as { value?: unknown } | null)?.value ?? '');
      const node = pair.value as { flow?: boolean } | null;
      if (node && ((isSeq(node) && FLOW_LISTS.has(key)) || flowMaps.has(key))) node.flow = true;
    },
  });
  if (notes.length > 0) doc.commentBefore = notes.map((line) => ` ${line}`).join('\n');
  return doc.toString({ lineWidth: 0, minContentWidth: 0, flowCollectionPadding: false });
}

/**
 * `firewall:` the way the firewall's README example writes it: its options on one line, each
 * rule, alias and IPset on a line of its own.
 */
function styleFirewall(doc: Document): void {
  const flow = (node: unknown): void => {
    if (isMap(node) || isSeq(node)) node.flow = true;
  };
  flow(doc.getIn(['firewall', 'options'], true));
  for (const section of ['rules', 'aliases', 'ipsets']) {
    const node = doc.getIn(['firewall', section], true);
    if (isSeq(node)) for (const item of node.items) flow(item);
    if (isMap(node)) for (const pair of node.items) flow(pair.value);
  }
}

/** A guest's document as text. */
export function renderGuest(document: GuestDocument, notes: readonly string[]): string {
  return renderOne(document, notes, new Set(['ha']), styleFirewall);
}

/** A Pool document as text. */
export function renderPool(document: PoolDocumentText, notes: readonly string[]): string {
  return renderOne(document, notes, new Set());
}

/** A BackupJob document as text: its guest list and retention on one line each. */
export function renderBackupJob(document: object): string {
  return renderOne(document, [], new Set(['retention']));
}

/** A Cluster document as text. */
export function renderCluster(document: ClusterDocumentText, notes: readonly string[]): string {
  return renderOne(document, notes, new Set(['vmids']));
}

/** Several documents in one file, separated as YAML separates them. */
export function joinDocuments(texts: readonly string[]): string {
  return texts.join('---\n');
}
