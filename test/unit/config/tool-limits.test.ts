import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { kustomizeOptions } from '../../../src/sources/build/kustomize.ts';
import { toolLimits } from '../../../src/sources/build/tool.ts';

const minimal = 'cluster: {name: a}\n';

describe('render tool limits', () => {
  it('default to 60 s, 32 MiB of output and 1 GiB of memory, and reach kustomize and helm', () => {
    const config = parseConfig(minimal);
    expect(toolLimits(config.render)).toEqual({
      timeoutMs: 60_000,
      maxOutputBytes: 32 * 1024 * 1024,
      memoryBytes: 1024 * 1024 * 1024,
    });
    expect(kustomizeOptions(config).limits).toEqual(toolLimits(config.render));
  });

  it('are read from the render section; a memory limit of 0 means none', () => {
    const config = parseConfig(
      `${minimal}render: {toolTimeout: 2m, toolMemoryBytes: 0, toolMaxOutputBytes: 2097152}\n`,
    );
    expect(toolLimits(config.render)).toEqual({
      timeoutMs: 120_000,
      maxOutputBytes: 2097152,
      memoryBytes: 0,
    });
  });

  it.each([
    ['toolMemoryBytes: 1000', 'must be 0 (no limit) or at least 67108864 (64 MiB)'],
    ['toolTimeout: 30', 'has no unit'],
    ['toolMaxOutputBytes: 10', 'render.toolMaxOutputBytes'],
  ])('refuses %s', (field, message) => {
    expect(() => parseConfig(`${minimal}render: {${field}}\n`)).toThrow(message);
  });
});
