// The command line as typed, made into what the parser reads: cluster flags before the command move after the
// command path (a group's included), `-x=value` splits, and nothing else moves.
import { describe, expect, it } from 'vitest';
import { normalizeArgv } from '../../../src/cli/argv.ts';

describe('normalizeArgv', () => {
  it('moves cluster flags given before the command after it', () => {
    expect(normalizeArgv(['-n', 'demo', 'render', 'dir'])).toEqual(['render', '-n', 'demo', 'dir']);
    expect(normalizeArgv(['--kubeconfig=/k', '-o', 'json', 'status'])).toEqual([
      'status',
      '--kubeconfig=/k',
      '-o',
      'json',
    ]);
    expect(normalizeArgv(['-n', 'demo', 'rollout', 'status', 'deployment/web'])).toEqual([
      'rollout',
      'status',
      '-n',
      'demo',
      'deployment/web',
    ]);
  });

  it('splits a short flag with =, and leaves everything after -- alone', () => {
    expect(normalizeArgv(['render', '-o=json', '-n=demo', 'dir'])).toEqual([
      'render',
      '-o',
      'json',
      '-n',
      'demo',
      'dir',
    ]);
    expect(normalizeArgv(['render', '--', '-o=json'])).toEqual(['render', '--', '-o=json']);
  });

  it('leaves other command lines as they are', () => {
    expect(normalizeArgv(['render', '-n', 'demo', 'dir'])).toEqual(['render', '-n', 'demo', 'dir']);
    expect(normalizeArgv(['--version'])).toEqual(['--version']);
    expect(normalizeArgv(['-n', 'demo'])).toEqual(['-n', 'demo']);
    expect(normalizeArgv(['--help', 'render'])).toEqual(['--help', 'render']);
  });
});
