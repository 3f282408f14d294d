// What the command prints for people on stderr keeps its quoted text from acting on the terminal
// (src/cli/printable.ts): a repository's file name, a chart's message, a server's words.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { printable } from '../../../src/cli/printable.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
const ESC = '\u001b';
const BEL = '\u0007';

describe('printable', () => {
  it('writes control characters as escapes, keeping line breaks, tabs and text past ASCII', () => {
    expect(printable(`a${ESC}[2J b${ESC}]8;;http://x/${ESC}\\ c${BEL}\u009b1m\u007f`)).toBe(
      'a\\u001b[2J b\\u001b]8;;http://x/\\u001b\\ c\\u0007\\u009b1m\\u007f',
    );
    expect(printable('line one\n\tline two: héllo ✓\n')).toBe('line one\n\tline two: héllo ✓\n');
  });

  describe('the command', () => {
    let dir = '';
    afterAll(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('names a file whose name sets the terminal title with the escape written out', async () => {
      dir = await mkdtemp(join(tmpdir(), 'mooring-printable-'));
      // A repository chooses its file names: this one would set the terminal's title.
      const name = `app${ESC}]0;pwned${BEL}.yaml`;
      await writeFile(join(dir, name), 'kind: [\n');
      const { code, stderr } = await new Promise<{ code: number; stderr: string }>((done) => {
        execFile(
          process.execPath,
          [join(ROOT, 'src', 'cli', 'main.ts'), 'render', '--offline', dir],
          (error, _stdout, stderr) => done({ code: error ? Number(error.code) : 0, stderr }),
        );
      });
      expect(code).toBe(2);
      expect(stderr).toContain('app\\u001b]0;pwned\\u0007.yaml:');
      expect(stderr).not.toContain(ESC);
      expect(stderr).not.toContain(BEL);
    });
  });
});
