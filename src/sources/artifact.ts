// Artifacts: what sources turn the outside world into. A changed manifest file in Git and a new image digest in a
// registry are both artifacts; the sync loop decides from them which deployments to sync.

export type ArtifactType = 'git/file' | 'docker/image' | 'local/file' | 'helm/chart' | 'oci/manifests';

export interface Artifact {
  type: ArtifactType;
  /** The source's name in the config. */
  source: string;
  /** `repo-url#path` for a file, `host/repo` for an image. */
  reference: string;
  /** The path of a file in its repository or folder; the tag of an image. */
  name: string;
  /** A commit sha; an image digest (`sha256:…`); a content hash for a local file. */
  version: string;
  /** Where it came from, for reports: the commit's message and author, an image's labels… */
  provenance?: Record<string, string>;
}

/** What one poll of a source found. `changed: false` means the source is where it was (nothing to do). */
export interface PollResult {
  source: string;
  changed: boolean;
  /** The source's new revision: a commit sha, an image digest, a folder's content hash. */
  revision: string;
  artifacts: Artifact[];
}
