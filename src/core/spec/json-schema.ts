import { z } from 'zod';
import { isServerManaged, optionNames } from '../config-options.js';
import type { GuestType } from '../guest-flavours.js';
import { documentNameList, guestKeys, OBJECT_KINDS } from '../kinds/registry.js';
import { ClusterDocument, ContainerDocument, VmDocument } from './schema.js';

type JsonObject = Record<string, unknown>;

/**
 * The config keys Proxmox knows for a guest type as one pattern (`net[n]` becomes `net\d+`), minus
 * the keys the server manages: what an editor can check while the spec is written.
 */
function configKeyPattern(type: GuestType): string {
  const names = optionNames(type)
    .filter((name) => !isServerManaged(name.replace('[n]', '0')))
    .map((name) => (name.endsWith('[n]') ? `${name.slice(0, -3)}\\d+` : name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .sort();
  return `^(${names.join('|')})$`;
}

function withConfigKeys(schema: JsonObject, type: GuestType, convert: (schema: z.ZodType) => JsonObject): JsonObject {
  const properties = schema.properties as Record<string, JsonObject> | undefined;
  const config = properties?.config;
  if (config) config.propertyNames = { pattern: configKeyPattern(type) };
  // Keys other kinds add to guest documents (a guest's `pool:`), described by those kinds.
  for (const { key } of guestKeys()) {
    if (properties) properties[key.key] = { ...convert(key.schema), description: key.description };
  }
  return schema;
}

/**
 * A JSON Schema (draft 2020-12) of one spec document, for editors (`# yaml-language-server:
 * $schema=…`): the same shapes the loader checks, and the config keys Proxmox knows. Values are
 * checked by `pve-gitops validate`, which also runs Proxmox's own value checks.
 */
export function specJsonSchema(): JsonObject {
  const convert = (schema: z.ZodType): JsonObject => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
  const strip = (schema: JsonObject): JsonObject => {
    const { $schema: _drop, ...rest } = schema;
    return rest;
  };
  const objectDocuments = OBJECT_KINDS.flatMap((kind) => kind.documents.map((document) => strip(convert(document.schema))));
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'pve-gitops spec document',
    description: `One YAML document of a pve-gitops spec repository: kind ${documentNameList()}.`,
    oneOf: [
      strip(convert(ClusterDocument)),
      withConfigKeys(strip(convert(VmDocument)), 'qemu', (schema) => strip(convert(schema))),
      withConfigKeys(strip(convert(ContainerDocument)), 'lxc', (schema) => strip(convert(schema))),
      ...objectDocuments,
    ],
  };
}
