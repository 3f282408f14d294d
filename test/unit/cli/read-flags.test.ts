// The CLI's forms of the render settings that errors name: each flag sets the agent's setting of the same meaning,
// and the defaults are the agent's.
import { describe, expect, it } from 'vitest';
import { cliConfig, cliRenderOptions } from '../../../src/cli/local-input.ts';
import { configSchema } from '../../../src/config/schema.ts';
import { DEFAULT_LIMITS } from '../../../src/render/parse.ts';

describe('render settings as CLI flags', () => {
  it("defaults to the agent's settings", () => {
    const defaults = configSchema.parse({}).render;
    expect(cliConfig({}).render).toEqual({ ...defaults, podTemplateLabels: 'auto' });
    expect(cliRenderOptions({})).toEqual({
      clusterScoped: [],
      applyAppLabels: true,
      podTemplateLabels: 'auto',
      versioning: 'referenced',
      limits: DEFAULT_LIMITS,
    });
  });

  it('maps each flag onto its setting', () => {
    const config = cliConfig({
      allowRemoteBases: true,
      clusterScoped: ['gateway.networking.k8s.io/GatewayClass'],
      ageKeyFile: '/keys.txt',
    });
    expect(config.render.kustomize.allowRemoteBases).toBe(true);
    expect(config.render.clusterScoped).toEqual(['gateway.networking.k8s.io/GatewayClass']);
    expect(config.decryption.ageKeyFile).toBe('/keys.txt');
    expect(cliRenderOptions({ appLabels: 'true' })).toMatchObject({
      applyAppLabels: true,
      podTemplateLabels: true,
    });
    expect(cliRenderOptions({ appLabels: 'false' })).toMatchObject({ applyAppLabels: false });
    expect(cliRenderOptions({ versioning: 'all' })).toMatchObject({ versioning: 'all' });
  });

  it.each([
    ['8Mi', 8 * 1024 * 1024],
    ['10M', 10_000_000],
    ['5000000', 5_000_000],
  ])('--max-file-bytes %s sets render.maxFileBytes to %d, and render holds files to it', (flag, bytes) => {
    expect(cliConfig({ maxFileBytes: flag }).render.maxFileBytes).toBe(bytes);
    expect(cliRenderOptions({ maxFileBytes: flag }).limits?.maxFileBytes).toBe(bytes);
  });

  it('--tool-max-output-bytes sets render.toolMaxOutputBytes, within the bounds of the setting', () => {
    expect(cliConfig({ toolMaxOutputBytes: '64Mi' }).render.toolMaxOutputBytes).toBe(64 * 1024 * 1024);
    expect(() => cliConfig({ toolMaxOutputBytes: '1000' })).toThrow(/^--tool-max-output-bytes: /);
    expect(() => cliConfig({ maxFileBytes: '4 MB' })).toThrow('--max-file-bytes "4 MB" is not a size');
    expect(() => cliConfig({ maxFileBytes: '0' })).toThrow('--max-file-bytes: must be more than 0');
    expect(() => cliConfig({ maxFileBytes: '99999999999999999999Gi' })).toThrow('is not a size');
    // The same bounds as the setting's.
    const { success } = configSchema.shape.render.safeParse({ toolMaxOutputBytes: 1024 * 1024 - 1 });
    expect(success).toBe(false);
    expect(() => cliConfig({ toolMaxOutputBytes: String(1024 * 1024 - 1) })).toThrow(/at least 1048576/);
    expect(cliConfig({ toolMaxOutputBytes: '1Mi' }).render.toolMaxOutputBytes).toBe(1024 * 1024);
  });

  it('refuses a cluster-scoped kind without its group', () => {
    expect(() => cliConfig({ clusterScoped: ['GatewayClass'] })).toThrow(/must be group\/Kind/);
  });
});
