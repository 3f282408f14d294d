// A value cut down to the fields a caller needs, described as data: `true` keeps a value whole, `{'*': s}` keeps
// every key of a mapping by `s`, `{key: s}` the keys named, `[s]` every item of a sequence. A worker that parsed
// a large text sends back only this, so that copying the value to the event loop costs little.
export type Shape = true | { readonly [key: string]: Shape } | readonly [Shape];

export function keep(value: unknown, shape: Shape): unknown {
  if (shape === true) return value;
  if (Array.isArray(shape)) {
    const item = shape[0] as Shape;
    return Array.isArray(value) ? value.map((v) => keep(v, item)) : value;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  const every = (shape as { readonly [key: string]: Shape })['*'];
  for (const [key, v] of Object.entries(value)) {
    const s = every ?? (shape as { readonly [key: string]: Shape })[key];
    if (s !== undefined) out[key] = keep(v, s);
  }
  return out;
}
