// A chart folder of the user's (a CLI path, a local source) whose symlinks lead outside the repository is refused
// before helm runs: helm follows them wherever they lead, and `.Files.Get` then puts the file (a service account
// token, an age key) into the rendered objects.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { renderChart } from '../../../src/sources/build/helm.ts';
import { copyResolved, refuseSymlinksOutside } from '../../../src/sources/local/symlinks.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** A repository folder (with `.git`) holding `chart/` and a secret beside it, outside the repository. */
async function layout() {
  const top = await mkdtemp(join(tmpdir(), 'mooring-chart-links-'));
  dirs.push(top);
  const repo = join(top, 'repo');
  const chart = join(repo, 'charts', 'web');
  await mkdir(join(repo, '.git'), { recursive: true });
  await mkdir(join(chart, 'templates'), { recursive: true });
  await mkdir(join(repo, 'shared'), { recursive: true });
  await writeFile(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: web\nversion: 0.1.0\n');
  await writeFile(
    join(chart, 'templates', 'cm.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak}\ndata:\n  t: {{ .Files.Get "files/t" | quote }}\n',
  );
  await writeFile(join(repo, 'shared', 'helpers.tpl'), '{{- define "x" }}x{{ end }}\n');
  await writeFile(join(top, 'token'), 'the-service-account-token');
  return { top, repo, chart };
}

const request = (chart: string, label: string) => ({
  chart,
  label,
  releaseName: 'r',
  namespace: 'shop',
  valuesFiles: [],
  // A helm that must not run: the refusal comes first.
  helm: '/nonexistent/helm',
});

describe('symlinks in a chart folder of the user', () => {
  it('refuses one that leads outside the repository, naming it, before helm runs', async () => {
    const { top, chart } = await layout();
    await mkdir(join(chart, 'files'));
    await symlink(join(top, 'token'), join(chart, 'files', 't'));
    const error = await renderChart(request(chart, 'charts/web')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect(String(error)).toContain('charts/web/files/t: a symlink that leads outside');
    expect(String(error)).not.toContain('the-service-account-token');
  });

  it('refuses a link to a folder outside, and one inside a linked folder, and one that leads nowhere', async () => {
    const { top, repo, chart } = await layout();
    await symlink(top, join(chart, 'up'));
    await expect(refuseSymlinksOutside(chart, repo, 'charts/web')).rejects.toThrow(
      'charts/web/up: a symlink that leads outside',
    );
    await rm(join(chart, 'up'));
    // Inside the repository, a linked folder is walked as helm walks it.
    await symlink(join(repo, 'shared'), join(chart, 'templates', 'shared'));
    await refuseSymlinksOutside(chart, repo, 'charts/web');
    await symlink(join(top, 'token'), join(repo, 'shared', 'token'));
    await expect(refuseSymlinksOutside(chart, repo, 'charts/web')).rejects.toThrow(
      'charts/web/templates/shared/token: a symlink that leads outside',
    );
    await rm(join(repo, 'shared', 'token'));
    await symlink(join(repo, 'gone'), join(chart, 'dangling'));
    await expect(refuseSymlinksOutside(chart, repo, 'charts/web')).rejects.toThrow(
      'charts/web/dangling: a symlink that leads nowhere',
    );
    await rm(join(chart, 'dangling'));
    // A link back to a folder already walked ends.
    await symlink(chart, join(chart, 'templates', 'loop'));
    await refuseSymlinksOutside(chart, repo, 'charts/web');
  });

  it('takes the chart folder itself as the boundary outside any repository', async () => {
    const { repo, chart } = await layout();
    await rm(join(repo, '.git'), { recursive: true });
    await symlink(join(repo, 'shared', 'helpers.tpl'), join(chart, 'templates', '_helpers.tpl'));
    const error = await renderChart(request(chart, 'charts/web')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect(String(error)).toContain('charts/web/templates/_helpers.tpl: a symlink that leads outside');
  });
});

describe('symlinks under a `.git` folder of a chart', () => {
  // helm loads every file of the chart folder, `.git/**` included, and follows links there as anywhere.
  it('refuses a link inside a `.git` folder of the chart, before helm runs', async () => {
    const { top, chart } = await layout();
    await mkdir(join(chart, '.git'));
    await symlink(join(top, 'token'), join(chart, '.git', 't'));
    const error = await renderChart(request(chart, 'charts/web')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect(String(error)).toContain('charts/web/.git/t: a symlink that leads outside');
  });

  it('refuses a chart whose `.git` is itself a link outside', async () => {
    const { top, chart } = await layout();
    await symlink(top, join(chart, '.git'));
    const error = await renderChart(request(chart, 'charts/web')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StalledError);
    expect(String(error)).toContain('charts/web/.git: a symlink that leads outside');
  });

  it('refuses a link in the `.git` of the repository a chart at its top is', async () => {
    const { top, repo } = await layout();
    await writeFile(join(repo, 'Chart.yaml'), 'apiVersion: v2\nname: top\nversion: 0.1.0\n');
    await symlink(join(top, 'token'), join(repo, '.git', 'HEAD'));
    await expect(refuseSymlinksOutside(repo, repo, 'top')).rejects.toThrow(
      'top/.git/HEAD: a symlink that leads outside',
    );
  });
});

describe('the private copy of a chart folder', () => {
  it('holds what every link leads to, and no link: helm reads nothing of the user folder again', async () => {
    const { repo, chart } = await layout();
    await writeFile(join(repo, 'shared', 'note.txt'), 'shared note');
    await mkdir(join(chart, 'files'));
    await symlink(join(repo, 'shared', 'note.txt'), join(chart, 'files', 'note'));
    await symlink(join(repo, 'shared'), join(chart, 'templates', 'shared'));
    await symlink(chart, join(chart, 'templates', 'loop'));
    const to = join(await mkdtemp(join(tmpdir(), 'mooring-copy-')), 'web');
    dirs.push(dirname(to));
    // The same folder linked twice side by side: helm loads it under both names.
    await symlink(join(repo, 'shared'), join(chart, 'templates', 'again'));
    await copyResolved(chart, to, repo, 'charts/web');
    expect(await readFile(join(to, 'files', 'note'), 'utf8')).toBe('shared note');
    expect(await readFile(join(to, 'templates', 'shared', 'helpers.tpl'), 'utf8')).toContain('define "x"');
    expect(await readFile(join(to, 'templates', 'again', 'helpers.tpl'), 'utf8')).toContain('define "x"');
    const links = [];
    for (const entry of await readdir(to, { recursive: true, withFileTypes: true }))
      if (entry.isSymbolicLink()) links.push(entry.name);
    expect(links).toEqual([]);
  });

  it('refuses a named pipe and a link outside, naming them', async () => {
    const { top, repo, chart } = await layout();
    execFileSync('mkfifo', [join(chart, 'pipe')]);
    const to = join(await mkdtemp(join(tmpdir(), 'mooring-copy-')), 'web');
    dirs.push(dirname(to));
    await expect(copyResolved(chart, to, repo, 'charts/web')).rejects.toThrow(
      'charts/web/pipe: not a regular file (a named pipe, socket or device)',
    );
    await rm(join(chart, 'pipe'));
    await symlink(join(top, 'token'), join(chart, 't'));
    await expect(copyResolved(chart, `${to}2`, repo, 'charts/web')).rejects.toThrow(
      'charts/web/t: a symlink that leads outside the repository',
    );
  });
});
