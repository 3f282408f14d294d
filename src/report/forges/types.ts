// The shape shared by every commit-status provider and the reporter that drives them.

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
  fetch?: typeof fetch | undefined;
  /** Per request; a status is not worth holding a sync for long. */
  timeoutMs?: number | undefined;
  /** Clock for X-RateLimit-Reset, which is an absolute time. */
  now?: (() => number) | undefined;
}
