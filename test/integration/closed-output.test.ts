// A deploy whose standard output's reader goes away (`mooring deploy … | head -1`) goes on to its end: every object
// applied and waited for, and its own exit code. Before, the write's EPIPE was an uncaught error that ended the
// process where it stood, the deploy half applied (src/cli/last-resort.ts, outliveReaders).
import { describe, expect, it } from 'vitest';
import { LAST_RESORT_MARK } from '../../src/cli/last-resort.ts';
import { firstLineOnly } from '../testbed/first-line.ts';
import { kubectl, manifestDir, testbed, useNamespace } from './helpers.ts';

describe('a deploy whose output is no longer read', () => {
  const ns = useNamespace('closed-out');

  it('applies and waits for every object, and exits as it would have', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 120; i++)
      files[`c${i}.yaml`] =
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-${i}\ndata:\n  n: "${i}"\n`;
    const dir = await manifestDir(files);
    const run = await firstLineOnly(['deploy', dir, '-n', ns(), '--kubeconfig', testbed().kube.kubeconfig]);
    expect(run.first, run.stderr).toMatch(/^configmap\/settings-\d+ created$/);
    expect(run.stderr).not.toContain(LAST_RESORT_MARK);
    expect(run.code, run.stderr).toBe(0);
    const listed = await kubectl(
      '-n',
      ns(),
      'get',
      'configmaps',
      '-l',
      'app.kubernetes.io/managed-by=mooring',
      '-o',
      'name',
    );
    expect(listed.stdout.split('\n').filter((l) => l.startsWith('configmap/settings-'))).toHaveLength(120);
  }, 120_000);
});
