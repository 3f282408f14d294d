// Texts of the YAML fast path's alphabet (schema.ts surelyString), for the reader's and the writer's tests.
import fc from 'fast-check';

/** Texts of the fast path's alphabet, beginning with the letters that begin YAML 1.1's words and floats. */
export const simpleText = fc
  .tuple(
    fc.constantFrom(...'aZyYnNoOtTfFeEixX'),
    fc.string({ unit: fc.constantFrom(...'aeosnyulfrtx0159-_./EONYI'), maxLength: 8 }),
  )
  .map(([first, rest]) => first + rest);
