// The CLI's forms of the render settings that errors name: each flag sets the agent's setting of the same meaning,
// and the defaults are the agent's.
import { describe, expect, it } from 'vitest';
import { cliConfig, cliRenderOptions } from '../../../src/cli/local-input.ts';
import { configSchema } from '../../../src/config/schema.ts';

describe('render settings as CLI flags', () => {
  it("defaults to the agent's settings", () => {
    const defaults = configSchema.parse({}).render;
    expect(cliConfig({}).render).toEqual({ ...defaults, podTemplateLabels: 'auto' });
    expect(cliRenderOptions({})).toEqual({
      clusterScoped: [],
      applyAppLabels: true,
      podTemplateLabels: 'auto',
      versioning: 'referenced',
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

  it('refuses a cluster-scoped kind without its group', () => {
    expect(() => cliConfig({ clusterScoped: ['GatewayClass'] })).toThrow(/must be group\/Kind/);
  });
});
