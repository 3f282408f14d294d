// The shapes every forge client shares: commit statuses (each provider and the reporter that drives them) and
// pull-request comments and descriptions (each client and the previews that drive them).
import type { Fetch } from '../../http/fetch.ts';

/**
 * What mooring says about a commit; each provider maps it onto its own states. `cancelled`: the sync ended
 * before the deployment was stable, because a newer revision replaced it or the agent stopped.
 */
export type CommitState = 'pending' | 'success' | 'failure' | 'error' | 'cancelled';

export interface CommitStatus {
  state: CommitState;
  description: string;
  /** Tells statuses of several clusters and deployments apart on the same commit. */
  context: string;
  targetUrl?: string | undefined;
}

export interface StatusTarget {
  /** The Git repository as the source configures it (https, ssh or scp-like). */
  repoUrl: string;
  commit: string;
}

export type ProviderName = 'github' | 'gitlab' | 'gitea' | 'bitbucket-cloud' | 'bitbucket-server';

export interface CommitStatusProvider {
  readonly name: ProviderName;
  /** The longest description the API accepts, in UTF-16 code units (never more than its own count). */
  readonly maxDescription: number;
  /**
   * Posts one status. The token is passed per call, not held, so that a rotated Secret is used as soon as it is
   * read again. Throws the error taxonomy: WaitingError (rate limited), TransientError (network, 5xx),
   * StalledError (bad credentials, unknown repository, a request the API refuses).
   */
  post(target: StatusTarget, status: CommitStatus, token: string): Promise<void>;
}

/** What providers need from the outside world, passed in so that tests can point them at a capturing server. */
export interface HttpOptions {
  fetch?: Fetch | undefined;
  /** Per request; a status is not worth holding a sync for long. */
  timeoutMs?: number | undefined;
  /** Clock for X-RateLimit-Reset, which is an absolute time. */
  now?: (() => number) | undefined;
  /** Gives every request up at its abort (the caller no longer waits: a preview's statuses at the agent's stop). */
  signal?: AbortSignal | undefined;
}

export interface PullRequestTarget {
  /** The Git clone URL as a source configures it (https, ssh or scp-like). */
  repoUrl: string;
  /** The pull (merge) request's number in its repository: GitHub's and Gitea's number, GitLab's iid, Bitbucket's id. */
  number: number;
}

export interface PostedComment {
  id: string;
  /** Whether the comment is new; false when an existing one was updated (or already said the same). */
  created: boolean;
  /** Its page, when the forge says. */
  url?: string | undefined;
}

export interface PullRequestInfo {
  number: number;
  state: 'open' | 'closed' | 'merged';
  /** The PR's head commit. Bitbucket Cloud gives it abbreviated (12 hex digits). */
  headSha: string;
  /** The target branch's name, e.g. main. */
  baseRef: string;
  /** The head branch's name, as its author wrote it (untrusted: a fork's author chooses it). */
  headRef: string;
  /** When it was last updated, as the forge says (ISO 8601), where it says. */
  updatedAt?: string | undefined;
  /** The head repository differs from the base repository (or is gone, which is no more trusted). */
  fromFork: boolean;
  /** The author's login or username (Bitbucket Cloud: nickname, as it has no usernames). */
  author: string;
  /** Names; Bitbucket has no labels: always empty there. */
  labels: string[];
}

export interface PreviewCommentProvider {
  readonly name: ProviderName;
  /** The longest comment body the API takes, in characters. */
  readonly maxBody: number;
  /**
   * Updates the PR's comment whose body contains `marker` (an HTML comment like <!-- mooring-preview -->), or creates
   * one. Where the forge tells whose token this is, only that user's comments are considered, so that nobody else's
   * comment holding the marker is taken for ours. Listing is paged and bounded. The token is passed per call, as
   * for commit statuses. Throws the error taxonomy, each error naming the PR (`owner/repo#12`).
   */
  upsert(target: PullRequestTarget, body: string, marker: string, token: string): Promise<PostedComment>;
  /** The PR as the forge describes it (for fork/author/label checks when the PR was found by polling refs). */
  pullRequest(target: PullRequestTarget, token: string): Promise<PullRequestInfo>;
}
