/**
 * The part of the Reflect metadata API that tsyringe (a dependency of @peculiar/x509) looks for
 * before it loads: `getMetadata`, `getOwnMetadata`, `defineMetadata`, on a WeakMap. Imported for
 * its effect, before @peculiar/x509; a no-op when a full polyfill (reflect-metadata) is present.
 */
type MetadataReflect = typeof Reflect & {
  getMetadata?: (key: unknown, target: object) => unknown;
  getOwnMetadata?: (key: unknown, target: object) => unknown;
  defineMetadata?: (key: unknown, value: unknown, target: object) => void;
};

const reflect = Reflect as MetadataReflect;
if (!reflect.getMetadata) {
  const store = new WeakMap<object, Map<unknown, unknown>>();
  reflect.getOwnMetadata = (key, target) => store.get(target)?.get(key);
  reflect.getMetadata = (key, target) => {
    for (let t: object | null = target; t !== null; t = Object.getPrototypeOf(t) as object | null) {
      const value = store.get(t)?.get(key);
      if (value !== undefined) return value;
    }
    return undefined;
  };
  reflect.defineMetadata = (key, value, target) => {
    let map = store.get(target);
    if (!map) store.set(target, (map = new Map()));
    map.set(key, value);
  };
}
