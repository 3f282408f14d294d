// Why a sync was cancelled: a newer revision of the same deployment replaced it. The queue aborts the running
// sync's signal with a Superseded reason; reporters read it to give the cancelled sync's pending status its end.

export class Superseded extends Error {
  /** The commit (or revision, for image-only changes) that replaced the cancelled sync. */
  readonly by: string;
  constructor(by: string) {
    super(`superseded by ${by}`);
    this.name = 'Superseded';
    this.by = by;
  }
}

/** The commit or revision that replaced a cancelled sync, when a newer one did. */
export function supersededBy(signal: AbortSignal | undefined): string | undefined {
  const reason: unknown = signal?.aborted ? signal.reason : undefined;
  return reason instanceof Superseded ? reason.by : undefined;
}

/** Why a sync was cancelled by a configuration reload: its deployment is no longer in the configuration. */
export class Withdrawn extends Error {
  constructor(deployment: string) {
    super(`deployment ${deployment} was removed from the configuration`);
    this.name = 'Withdrawn';
  }
}

/** Whether the sync's signal was aborted because its deployment left the configuration. */
export function withdrawn(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && signal.reason instanceof Withdrawn;
}
