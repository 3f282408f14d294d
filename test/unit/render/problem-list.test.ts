// Problem lists a person can act on: at most 20 shown with a count of the rest, in natural order, and the clearer
// message for generateName.
import { describe, expect, it } from 'vitest';
import { naturalOrder, problemLines } from '../../../src/errors.ts';
import { ApplyRejectedError } from '../../../src/kube/apply-errors.ts';
import { RenderError, RenderErrors } from '../../../src/render/errors.ts';
import { parseManifestFiles } from '../../../src/render/parse.ts';

describe('problem lists', () => {
  it('shows 20 problems and counts the rest, keeping them all on the error', () => {
    const errors = Array.from({ length: 25 }, (_, i) => new RenderError(`problem ${i}`));
    const error = new RenderErrors(errors);
    expect(error.errors).toHaveLength(25);
    const lines = error.message.split('\n');
    expect(lines[0]).toBe('25 problems:');
    expect(lines).toHaveLength(22);
    expect(lines[20]).toBe('  problem 19');
    expect(lines[21]).toBe('  … and 5 more');
    expect(new ApplyRejectedError(errors.map((e) => e.message)).message.split('\n')).toHaveLength(22);
    expect(problemLines(['a', 'b'])).toBe('  a\n  b');
  });

  it('orders positions as numbers', () => {
    const places = ['app.yaml:1059:1', 'app.yaml:430:1', 'app.yaml:1002:1', 'app.yaml:9:3', 'b.yaml:2:1'];
    expect([...places].sort(naturalOrder)).toEqual([
      'app.yaml:9:3',
      'app.yaml:430:1',
      'app.yaml:1002:1',
      'app.yaml:1059:1',
      'b.yaml:2:1',
    ]);
  });

  it('says generateName is only for hooks rather than that a name is missing', () => {
    const text = 'apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: migrate-}\nspec: {}\n';
    const { errors } = parseManifestFiles([{ path: 'jobs/job.yaml', text }]);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toContain('jobs/job.yaml:1:1: Job metadata.generateName is only for hooks');
    expect(errors[0]?.message).not.toContain('missing');
  });

  it('gives a hook written with generateName a fresh name, as the API server would', () => {
    const hook = (annotation: string) =>
      `apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: migrate-, annotations: {${annotation}}}\nspec: {}\n`;
    for (const annotation of ['helm.sh/hook: pre-upgrade', 'argocd.argoproj.io/hook: PreSync']) {
      const first = parseManifestFiles([{ path: 'hooks/job.yaml', text: hook(annotation) }]);
      const second = parseManifestFiles([{ path: 'hooks/job.yaml', text: hook(annotation) }]);
      expect(first.errors).toEqual([]);
      const name = first.objects[0]?.object.metadata.name ?? '';
      expect(name).toMatch(/^migrate-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      expect(second.objects[0]?.object.metadata.name).not.toBe(name);
      expect(first.objects[0]?.object.metadata).not.toHaveProperty('generateName');
    }
  });
});

describe('a chart read as plain files', () => {
  it('is one problem naming the chart, not one per template', () => {
    const files = [
      { path: 'web/Chart.yaml', text: 'apiVersion: v2\nname: web\nversion: 1.0.0\n' },
      { path: 'web/values.yaml', text: 'replicas: 1\n' },
      ...Array.from({ length: 30 }, (_, i) => ({
        path: `web/templates/t${i}.yaml`,
        text: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n',
      })),
      { path: 'other/app.yaml', text: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n' },
    ];
    const { objects, errors } = parseManifestFiles(files);
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^web\/Chart\.yaml:1:1: this folder holds a Helm chart.*helm: \{chart: web\}/),
    ]);
    expect(objects.map((o) => o.object.metadata.name)).toEqual(['other']);
  });
});
