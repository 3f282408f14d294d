import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../../src/config/duration.ts';

describe('durations', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['2d', 172_800_000],
  ])('parses %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '30', 'soon', '5 m', 'm5', '-5m', '5mm'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it.each([
    [3_600_000, '1h'],
    [300_000, '5m'],
    [45_000, '45s'],
    [1500, '1500ms'],
  ])('formats %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
