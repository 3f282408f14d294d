import { describe, expect, it } from 'vitest';
import { isAllowedRepository } from '../../../../src/sources/build/helm.ts';
import { helmRange } from '../../../../src/sources/charts/dependencies.ts';

const allowed_ = (repository: string, allowed: readonly string[]) =>
  isAllowedRepository(
    repository,
    allowed,
    'charts/web/Chart.yaml: dependency common is refused: its repository',
  );

describe('allowed repositories', () => {
  const allowed = ['https://charts.example.com/stable', 'oci://registry.example.com/charts/'];
  it('allows the prefix itself and the folders below it', () => {
    expect(allowed_('https://charts.example.com/stable', allowed)).toBe(true);
    expect(allowed_('https://charts.example.com/stable/', allowed)).toBe(true);
    expect(allowed_('https://charts.example.com/stable/extra', allowed)).toBe(true);
    expect(allowed_('oci://registry.example.com/charts', allowed)).toBe(true);
  });
  it('refuses what only starts with the same characters', () => {
    expect(allowed_('https://charts.example.com/stable-evil', allowed)).toBe(false);
    expect(allowed_('https://charts.example.com/stablex/y', allowed)).toBe(false);
    expect(allowed_('oci://registry.example.com/charts2', allowed)).toBe(false);
    expect(allowed_('https://charts.example.com', allowed)).toBe(false);
    expect(allowed_('', allowed)).toBe(false);
    expect(allowed_('https://x', [''])).toBe(false);
  });
  it('refuses a repository that climbs out of an allowed prefix, naming the Chart.yaml and the dependency', () => {
    expect(() => allowed_('oci://registry.example.com/charts/../../evilorg/charts', allowed)).toThrow(
      /^charts\/web\/Chart\.yaml: dependency common is refused: its repository holds a "\.\." path segment: "oci:\/\/registry\.example\.com\/charts\/\.\.\/\.\.\/evilorg\/charts"/,
    );
    expect(() => allowed_('https://charts.example.com/stable/%2e%2e/x', allowed)).toThrow(
      /encoded separator/,
    );
  });
});

describe("Helm's version constraints", () => {
  it('become semver ranges', () => {
    expect(helmRange('>= 1.2, < 2')).toBe('>= 1.2  < 2');
    expect(helmRange('^1.2 || ~2.0')).toBe('^1.2 || ~2.0');
    expect(helmRange('1.2.x')).toBe('1.2.x');
  });
});
