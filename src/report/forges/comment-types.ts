// The shape shared by every pull-request comment client (one per kind of forge) and what drives them.
import type { ProviderName } from './types.ts';

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
