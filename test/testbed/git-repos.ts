// Bare repositories for the test bed's Git server, made and changed with the real `git` binary (execFile, no
// shell). Commits are written with plumbing into the bare repository (a temporary index and work tree, then
// commit-tree and update-ref), which works the same on an empty repository and needs no git user config.
import { execFile, spawn } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface CommitOptions {
  message?: string;
  /** The branch to commit on, created when absent; `main` by default. */
  branch?: string;
  author?: { name: string; email: string };
  /** A lightweight tag on the new commit; refused when the tag exists. */
  tag?: string;
  /** A branch that does not exist yet starts from this commit (a pull request's branch off main). */
  from?: string;
  /**
   * Signs the commit as `git commit -S` does: with gpg (the key's id, in the keyring at `gnupgHome`), or with an SSH
   * key (`gpg.format ssh`, the private key's path).
   */
  sign?: { format: 'openpgp'; key: string; gnupgHome: string } | { format: 'ssh'; key: string } | undefined;
  /** Symlinks to commit, by path: the target as the link holds it (`../../shared/values.yaml`). */
  symlinks?: Record<string, string>;
}

const REPO_NAME = /^[a-z0-9][a-z0-9._/-]*$/;
const ZERO_SHA = '0'.repeat(40);
const COMMITTER = { name: 'Mooring Testbed', email: 'testbed@mooring.invalid' };

/** Creates `root/<name>.git` with pushes over HTTP enabled and HEAD on `branch` (default main). */
export async function createBareRepo(
  root: string,
  name: string,
  options: { branch?: string } = {},
): Promise<string> {
  if (!REPO_NAME.test(name) || name.includes('..') || name.includes('//') || name.endsWith('/')) {
    throw new Error(`repository name "${name}" must match ${REPO_NAME} and hold no ".." or empty segment`);
  }
  const branch = options.branch ?? 'main';
  await checkRefName(`refs/heads/${branch}`);
  const path = join(root, `${name}.git`);
  await mkdir(dirname(path), { recursive: true });
  await mkdir(path); // fails when it exists: a test reusing a name is a mistake to hear about
  await git(['init', '--quiet', '--bare', `--initial-branch=${branch}`, path]);
  await git(['config', 'http.receivepack', 'true'], { gitDir: path });
  // isomorphic-git's clone fails with "Could not find HEAD" unless HEAD names the branch that gets commits.
  await git(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], { gitDir: path });
  return path;
}

/**
 * Commits `files` (path -> content; null deletes) on top of the branch, creating it on the first commit.
 * Returns the new commit's sha. Committer dates strictly increase along the branch, so that two commits made
 * within one second still differ and sort in order.
 */
export async function commitFiles(
  repoPath: string,
  files: Record<string, string | null>,
  options: CommitOptions = {},
): Promise<string> {
  const branch = options.branch ?? 'main';
  const ref = `refs/heads/${branch}`;
  await checkRefName(ref);
  if (options.tag !== undefined) await checkRefName(`refs/tags/${options.tag}`);
  const links = options.symlinks ?? {};
  const paths = [...Object.keys(files), ...Object.keys(links)];
  for (const path of paths) checkFilePath(path);

  const scratch = await mkdtemp(join(tmpdir(), 'mooring-commit-'));
  try {
    const workTree = join(scratch, 'work');
    const env = { GIT_INDEX_FILE: join(scratch, 'index'), GIT_WORK_TREE: workTree };
    await mkdir(workTree);
    const tip = await branchTip(repoPath, ref);
    const parent = tip ?? (options.from ? await commitTip(repoPath, options.from) : undefined);
    if (parent) await git(['read-tree', parent.sha], { gitDir: repoPath, env });
    for (const [path, content] of Object.entries(files)) {
      if (content === null) continue; // absent from the work tree, so `update-index --remove` drops it
      const file = join(workTree, path);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, content, 'utf8');
    }
    for (const [path, target] of Object.entries(links)) {
      const file = join(workTree, path);
      await mkdir(dirname(file), { recursive: true });
      await symlink(target, file);
    }
    if (paths.length > 0) {
      const input = paths.map((path) => `${path}\0`).join('');
      await git(['update-index', '--add', '--remove', '-z', '--stdin'], { gitDir: repoPath, env, input });
    }
    const tree = (await git(['write-tree'], { gitDir: repoPath, env })).trim();

    const time = Math.max(Math.floor(Date.now() / 1000), parent ? parent.time + 1 : 0);
    const author = options.author ?? COMMITTER;
    const identity = {
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_AUTHOR_DATE: `@${time} +0000`,
      GIT_COMMITTER_NAME: COMMITTER.name,
      GIT_COMMITTER_EMAIL: COMMITTER.email,
      GIT_COMMITTER_DATE: `@${time} +0000`,
    };
    const sign = options.sign;
    const signing =
      sign?.format === 'ssh'
        ? ['-c', 'gpg.format=ssh', '-c', `user.signingkey=${sign.key}`]
        : sign?.format === 'openpgp'
          ? ['-c', 'gpg.format=openpgp', '-c', `user.signingkey=${sign.key}`]
          : [];
    const commitArgs = [
      ...signing,
      'commit-tree',
      tree,
      ...(parent ? ['-p', parent.sha] : []),
      ...(sign ? ['-S'] : []),
      '-F',
      '-',
    ];
    const message = `${options.message ?? 'testbed commit'}\n`;
    const signEnv: Record<string, string> = sign?.format === 'openpgp' ? { GNUPGHOME: sign.gnupgHome } : {};
    const sha = (
      await git(commitArgs, { gitDir: repoPath, env: { ...identity, ...signEnv }, input: message })
    ).trim();
    // The old value guards against a concurrent writer, as a non-force push would.
    await git(['update-ref', '-m', 'testbed commit', ref, sha, tip?.sha ?? ZERO_SHA], {
      gitDir: repoPath,
    });
    if (options.tag !== undefined) {
      await git(['update-ref', `refs/tags/${options.tag}`, sha, ZERO_SHA], { gitDir: repoPath });
    }
    return sha;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * An annotated tag `name` on `commit` (`git tag -a`), signed as `git tag -s` signs it when `sign` is given (gpg with
 * the key's id in the keyring at `gnupgHome`, or an SSH key with `gpg.format ssh`).
 */
export async function annotatedTag(
  repoPath: string,
  name: string,
  commit: string,
  sign?: CommitOptions['sign'],
): Promise<void> {
  await checkRefName(`refs/tags/${name}`);
  const signing = sign ? ['-c', `gpg.format=${sign.format}`, '-c', `user.signingkey=${sign.key}`] : [];
  const env: Record<string, string> = {
    GIT_COMMITTER_NAME: COMMITTER.name,
    GIT_COMMITTER_EMAIL: COMMITTER.email,
    ...(sign?.format === 'openpgp' ? { GNUPGHOME: sign.gnupgHome } : {}),
  };
  await git([...signing, 'tag', sign ? '-s' : '-a', '-m', `release ${name}`, name, commit], {
    gitDir: repoPath,
    env,
  });
}

/** The commit `sha` with its committer time, as branchTip gives a branch's. */
async function commitTip(repoPath: string, sha: string): Promise<{ sha: string; time: number }> {
  const time = Number((await git(['show', '-s', '--format=%ct', sha], { gitDir: repoPath })).trim());
  return { sha, time };
}

/**
 * Points `ref` at `sha` (created or moved): how a forge keeps a pull request's head (`refs/pull/N/head`,
 * `refs/merge-requests/N/head`) in the repository it is proposed to.
 */
export async function setRef(repoPath: string, ref: string, sha: string): Promise<void> {
  await checkRefName(ref);
  if (!/^[0-9a-f]{40}$/.test(sha)) throw new Error(`setRef: ${sha} is not a commit id`);
  await git(['update-ref', ref, sha], { gitDir: repoPath });
}

/**
 * Points `ref` at a merge of `head` into `base` (tree by `git merge-tree`, parents base then head), as a forge keeps
 * a pull request's trial merge (`refs/pull/N/merge`); returns the merge commit. A conflict is an error.
 */
export async function setMergeRef(
  repoPath: string,
  ref: string,
  base: string,
  head: string,
): Promise<string> {
  await checkRefName(ref);
  const tree = (await git(['merge-tree', '--write-tree', base, head], { gitDir: repoPath }))
    .split('\n')[0]
    ?.trim();
  if (!tree || !/^[0-9a-f]{40}$/.test(tree))
    throw new Error(`setMergeRef: ${base} and ${head} do not merge cleanly`);
  const identity = {
    GIT_AUTHOR_NAME: COMMITTER.name,
    GIT_AUTHOR_EMAIL: COMMITTER.email,
    GIT_COMMITTER_NAME: COMMITTER.name,
    GIT_COMMITTER_EMAIL: COMMITTER.email,
  };
  const sha = (
    await git(['commit-tree', tree, '-p', base, '-p', head, '-F', '-'], {
      gitDir: repoPath,
      env: identity,
      input: `Merge ${head} into ${base}\n`,
    })
  ).trim();
  await git(['update-ref', ref, sha], { gitDir: repoPath });
  return sha;
}

/** A file written from a repeated line, without ever being held in memory: `bytes` long, `head` first. */
export interface GeneratedFile {
  bytes: number;
  /** The text the file starts with (counted in `bytes`). */
  head?: string;
  /** Repeated (and cut) to fill the file; a NUL byte when absent. */
  fill?: string;
  /** Random bytes instead of `fill`: a file that does not compress, so its pack is as large as it is. */
  random?: boolean;
}

/**
 * Commits generated files (path -> size and content pattern) on top of the branch with `git fast-import`, which
 * streams large blobs straight into a pack: a commit holding a 1 GiB file costs a few MB of disk and little memory.
 */
export async function commitGenerated(
  repoPath: string,
  files: Record<string, GeneratedFile>,
  options: Pick<CommitOptions, 'message' | 'branch'> = {},
): Promise<string> {
  const branch = options.branch ?? 'main';
  const ref = `refs/heads/${branch}`;
  await checkRefName(ref);
  for (const path of Object.keys(files)) checkFilePath(path);
  const parent = await branchTip(repoPath, ref);
  const time = Math.max(Math.floor(Date.now() / 1000), parent ? parent.time + 1 : 0);
  const message = `${options.message ?? 'testbed commit'}\n`;
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
  Object.assign(env, {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    LC_ALL: 'C',
    GIT_DIR: repoPath,
  });
  // The fastest compression: a GiB of a repeated byte deflates about as small, several times sooner.
  const args = ['-c', 'core.compression=1', 'fast-import', '--quiet', '--big-file-threshold=16m'];
  const child = spawn('git', args, {
    env,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const write = async (data: string | Buffer): Promise<void> => {
    if (!child.stdin.write(data)) await once(child.stdin, 'drain');
  };
  const header = [
    `commit ${ref}`,
    `committer ${COMMITTER.name} <${COMMITTER.email}> ${time} +0000`,
    `data ${Buffer.byteLength(message)}`,
    message,
  ].join('\n');
  await write(parent ? `${header}from ${parent.sha}\n` : header);
  for (const [path, file] of Object.entries(files)) {
    await write(`M 100644 inline ${path}\ndata ${file.bytes}\n`);
    const head = Buffer.from(file.head ?? '');
    const unit = Buffer.from(file.fill ?? '\0');
    const block = Buffer.alloc(
      Math.max(unit.length, Math.floor((1024 * 1024) / unit.length) * unit.length),
      unit,
    );
    let left = file.bytes;
    const first = head.subarray(0, left);
    await write(first);
    left -= first.length;
    while (left > 0) {
      const piece = block.subarray(0, Math.min(left, block.length));
      await write(file.random ? randomFillSync(Buffer.allocUnsafe(piece.length)) : piece);
      left -= piece.length;
    }
    await write('\n');
  }
  child.stdin.end();
  const code = await exited;
  if (code !== 0) throw new Error(`git fast-import failed: ${stderr.trim()}`);
  return headOf(repoPath, branch);
}

/** The sha of the branch's tip; throws when the branch does not exist. */
export async function headOf(repoPath: string, branch = 'main'): Promise<string> {
  const ref = `refs/heads/${branch}`;
  await checkRefName(ref);
  const tip = await branchTip(repoPath, ref);
  if (!tip) throw new Error(`${repoPath}: no branch ${branch}`);
  return tip.sha;
}

/** Moves the branch to `sha` whatever it held, as `git push --force` of an older commit does. */
export async function forcePush(repoPath: string, sha: string, branch = 'main'): Promise<void> {
  const ref = `refs/heads/${branch}`;
  await checkRefName(ref);
  const commit = (
    await git(['rev-parse', '--verify', '--end-of-options', `${sha}^{commit}`], { gitDir: repoPath })
  ).trim();
  await git(['update-ref', '-m', 'testbed force-push', ref, commit], { gitDir: repoPath });
}

async function branchTip(repoPath: string, ref: string): Promise<{ sha: string; time: number } | undefined> {
  // for-each-ref also matches refs below `ref/`, and prints nothing (no error) for a missing ref.
  const out = await git(['for-each-ref', '--format=%(refname) %(objectname) %(committerdate:unix)', ref], {
    gitDir: repoPath,
  });
  for (const line of out.split('\n')) {
    const [name, sha, time] = line.split(' ');
    if (name === ref && sha) return { sha, time: Number(time) };
  }
  return undefined;
}

function checkFilePath(path: string): void {
  const segments = path.split('/');
  const bad = segments.some((s) => s === '' || s === '.' || s === '..' || s.toLowerCase() === '.git');
  if (bad || path.includes('\\') || path.includes('\0')) {
    throw new Error(`file path "${path}" must be relative, with no empty, ".", ".." or ".git" segment`);
  }
}

async function checkRefName(ref: string): Promise<void> {
  try {
    await git(['check-ref-format', ref]);
  } catch {
    throw new Error(`"${ref}" is not a valid git ref name`);
  }
}

interface GitOptions {
  gitDir?: string;
  env?: Record<string, string>;
  input?: string;
}

function git(args: string[], options: GitOptions = {}): Promise<string> {
  // Isolated from the caller's git setup: a GIT_DIR inherited from a hook, or a user's global config
  // (autocrlf, hooks, filters), would change what gets committed.
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
  Object.assign(env, { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C' }, options.env);
  if (options.gitDir) env.GIT_DIR = options.gitDir;
  return new Promise((resolve, reject) => {
    const child = execFile('git', args, { env, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) {
        const detail = stderr.trim() || error.message;
        // The subcommand, not a leading `-c key=value`.
        let at = 0;
        while (args[at] === '-c') at += 2;
        reject(new Error(`git ${args[at] ?? ''} failed: ${detail}`, { cause: error }));
      } else {
        resolve(stdout);
      }
    });
    child.stdin?.on('error', () => {}); // git may exit before reading all input; its exit status tells
    child.stdin?.end(options.input ?? '');
  });
}
