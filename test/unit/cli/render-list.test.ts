// `mooring render -o json` prints one v1 List, as `kubectl get -o json` does for several objects, so that its
// output is one JSON document `kubectl apply -f -` reads; `-o yaml` stays a stream of documents.
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { asList } from '../../../src/cli/commands/render.ts';
import { cli, SEED_004 } from './run-cli.ts';

describe('mooring render -o json', () => {
  it('prints the hydrated objects as one v1 List, in the order -o yaml prints them', async () => {
    const json = await cli('render', '--offline', SEED_004, '-n', 'prod', '-o', 'json');
    expect(json.code, json.stderr).toBe(0);
    const list = JSON.parse(json.stdout);
    expect(Object.keys(list)).toEqual(['apiVersion', 'kind', 'items']);
    expect(list.apiVersion).toBe('v1');
    expect(list.kind).toBe('List');
    const yaml = await cli('render', '--offline', SEED_004, '-n', 'prod', '-o', 'yaml');
    const documents = parseAllDocuments(yaml.stdout).map((d) => d.toJS());
    expect(documents.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ConfigMap/app-config-v000',
      'Deployment/my-app',
    ]);
    expect(list.items).toEqual(documents);
  });

  it('is a List also with no objects or one', () => {
    expect(asList([])).toEqual({ apiVersion: 'v1', kind: 'List', items: [] });
    expect(JSON.stringify(asList([{ kind: 'ConfigMap' }]))).toBe(
      '{"apiVersion":"v1","kind":"List","items":[{"kind":"ConfigMap"}]}',
    );
  });
});
