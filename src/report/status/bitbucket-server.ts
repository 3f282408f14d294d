// Bitbucket Server and Data Center: the build-status REST resource, POST {base}/rest/build-status/1.0/commits/{id}.
// It is keyed by commit alone (a build status belongs to the commit in every repository that has it).

import { apiBase, postJson, requireCommit } from './http.ts';
import { ownerAndName, parseRepoUrl, statusSubject } from './repo-url.ts';
import { boundedKey } from './text.ts';
import type { CommitState, CommitStatusProvider, HttpOptions } from './types.ts';

/**
 * Bitbucket Server's build states are three: it has no STOPPED, so a cancelled sync (which did not succeed)
 * is FAILED, with a description that says why.
 */
export const BITBUCKET_SERVER_STATES: Readonly<Record<CommitState, 'INPROGRESS' | 'SUCCESSFUL' | 'FAILED'>> =
  {
    pending: 'INPROGRESS',
    success: 'SUCCESSFUL',
    failure: 'FAILED',
    error: 'FAILED',
    cancelled: 'FAILED',
  };

/** Bitbucket Server stores key and name in columns of 255. */
const MAX_KEY = 255;

export interface BitbucketServerOptions {
  /** The server's base URL (with its context path, if any), e.g. https://bitbucket.example.com. */
  apiUrl: string;
  http?: HttpOptions | undefined;
}

export function bitbucketServerProvider(options: BitbucketServerOptions): CommitStatusProvider {
  const base = apiBase(options.apiUrl);
  return {
    name: 'bitbucket-server',
    maxDescription: 255,
    async post(target, status, token) {
      const commit = requireCommit(target.commit);
      await postJson(
        {
          provider: 'bitbucket-server',
          url: `${base}/rest/build-status/1.0/commits/${commit}`,
          headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
          body: {
            state: BITBUCKET_SERVER_STATES[status.state],
            key: boundedKey(status.context, MAX_KEY),
            name: boundedKey(status.context, MAX_KEY),
            // Required: without a target URL of our own, the commit's page in the repository.
            url: status.targetUrl || commitPage(base, target.repoUrl, commit),
            description: status.description,
          },
          subject: statusSubject(target),
        },
        options.http,
      );
    },
  };
}

// Clone URLs are {base}/scm/PROJECT/repo.git or ssh://host:7999/project/repo.git; personal repositories have
// a project of ~user and live under /users/.
function commitPage(base: string, repoUrl: string, commit: string): string {
  const [project, repo] = ownerAndName(parseRepoUrl(repoUrl), false, 'project/repository');
  const owner = project.startsWith('~')
    ? `users/${encodeURIComponent(project.slice(1))}`
    : `projects/${encodeURIComponent(project.toUpperCase())}`;
  return `${base}/${owner}/repos/${encodeURIComponent(repo)}/commits/${commit}`;
}
