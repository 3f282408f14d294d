import { describe, expect, it } from 'vitest';
import { isAllowedRepository } from '../../../../src/sources/build/helm.ts';
import { helmRange } from '../../../../src/sources/charts/dependencies.ts';

describe('allowed repositories', () => {
  const allowed = ['https://charts.example.com/stable', 'oci://registry.example.com/charts/'];
  it('allows the prefix itself and the folders below it', () => {
    expect(isAllowedRepository('https://charts.example.com/stable', allowed)).toBe(true);
    expect(isAllowedRepository('https://charts.example.com/stable/', allowed)).toBe(true);
    expect(isAllowedRepository('https://charts.example.com/stable/extra', allowed)).toBe(true);
    expect(isAllowedRepository('oci://registry.example.com/charts', allowed)).toBe(true);
  });
  it('refuses what only starts with the same characters', () => {
    expect(isAllowedRepository('https://charts.example.com/stable-evil', allowed)).toBe(false);
    expect(isAllowedRepository('https://charts.example.com/stablex/y', allowed)).toBe(false);
    expect(isAllowedRepository('oci://registry.example.com/charts2', allowed)).toBe(false);
    expect(isAllowedRepository('https://charts.example.com', allowed)).toBe(false);
    expect(isAllowedRepository('', allowed)).toBe(false);
    expect(isAllowedRepository('https://x', [''])).toBe(false);
  });
});

describe("Helm's version constraints", () => {
  it('become semver ranges', () => {
    expect(helmRange('>= 1.2, < 2')).toBe('>= 1.2  < 2');
    expect(helmRange('^1.2 || ~2.0')).toBe('^1.2 || ~2.0');
    expect(helmRange('1.2.x')).toBe('1.2.x');
  });
});
