// The warnings of a command that runs the agent's code, as lines for people (src/cli/command-log.ts).
import { describe, expect, it } from 'vitest';
import { commandLine, commandLogger } from '../../../src/cli/command-log.ts';

describe('a command’s log', () => {
  it('prints warnings and errors as lines naming the deployment and the object, never JSON', () => {
    const lines: string[] = [];
    const log = commandLogger((t) => lines.push(t)).child({ deployment: 'web' });
    log.info('applied');
    log.warn({ err: 'HTTP 502' }, 'cannot post the commit status');
    log.error({ object: 'Deployment shop/web' }, 'refused');
    log.warn({ err: new Error('socket hang up') }, 'cannot read the source');
    expect(lines).toEqual([
      'warning: deployment web: cannot post the commit status: HTTP 502\n',
      'error: deployment web, Deployment shop/web: refused\n',
      'warning: deployment web: cannot read the source: socket hang up\n',
    ]);
  });

  it('leaves out the record that ends a sync: the command says how it ended', () => {
    const lines: string[] = [];
    const log = commandLogger((t) => lines.push(t));
    log.error({ deployment: 'web', outcome: 'timed-out', release: 3 }, 'timed out after 10s with 1/2 stable');
    expect(lines).toEqual([]);
    expect(commandLine('{"level":50,"msg":"x","outcome":"failed"}')).toBeUndefined();
  });

  it('passes a line that is not a record on as it is', () => {
    expect(commandLine('plain words\n')).toBe('plain words');
  });

  it('writes the control characters of quoted text as escapes, so that no terminal acts on them', () => {
    const lines: string[] = [];
    const log = commandLogger((t) => lines.push(t));
    log.warn({ err: 'chart says \u001b]8;;http://x\u0007click\u001b[2J' }, 'cannot render');
    expect(lines).toEqual(['warning: cannot render: chart says \\u001b]8;;http://x\\u0007click\\u001b[2J\n']);
    expect(commandLine('raw \u001b[31mred')).toBe('raw \\u001b[31mred');
  });
});
