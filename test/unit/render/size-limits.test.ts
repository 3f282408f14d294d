import { describe, expect, it } from 'vitest';
import { formatLimit, formatSize, sizeOverLimit } from '../../../src/render/size-limits.ts';

describe('size limits as messages say them', () => {
  it.each([
    [17, '17 bytes'],
    [999, '999 bytes'],
    [4_321, '4.3 kB'],
    [812_000, '812 kB'],
    [5_200_000, '5.2 MB'],
    [34_000_000, '34 MB'],
  ])('formatSize(%d) is %s', (bytes, text) => expect(formatSize(bytes)).toBe(text));

  it.each([
    [4 * 1024 * 1024, '4 MiB'],
    [512 * 1024, '512 KiB'],
    [1000, '1000 bytes'],
  ])('formatLimit(%d) is %s', (bytes, text) => expect(formatLimit(bytes)).toBe(text));

  it('names the limit, its value, its flag and its setting', () => {
    expect(sizeOverLimit(5_200_000, 'maxFileBytes', 4 * 1024 * 1024)).toBe(
      'is 5.2 MB, over maxFileBytes (4 MiB; --max-file-bytes or render.maxFileBytes)',
    );
    expect(sizeOverLimit(40_000_000, 'toolMaxOutputBytes', 32 * 1024 * 1024)).toBe(
      'is 40 MB, over toolMaxOutputBytes (32 MiB; --tool-max-output-bytes or render.toolMaxOutputBytes)',
    );
  });
});
