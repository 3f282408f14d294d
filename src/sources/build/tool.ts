// Running the external tools that build a source's manifests (`kubectl kustomize`, `helm template`): one place
// that bounds their time and output and turns their failures into errors the user can act on, naming what was
// being built. Their own messages are cut to a few lines; `clean` removes what must not be passed on (paths of
// temporary folders, credentials in URLs).
import { execFile } from 'node:child_process';
import { StalledError } from '../../errors.ts';

export interface ToolRun {
  /** The binary, and how to say where it is configured when it is missing. */
  binary: string;
  configuredBy: string;
  args: readonly string[];
  /** What is built, in front of every message: `charts/web`, `overlays/prod/kustomization.yaml`. */
  label: string;
  /** `helm template`, `kustomize build`: the step, in messages. */
  step: string;
  env?: NodeJS.ProcessEnv | undefined;
  timeoutMs?: number | undefined;
  maxOutputBytes?: number | undefined;
  clean?: ((text: string) => string) | undefined;
}

/** The tool's standard output; a StalledError (bad chart, bad kustomization, no tool) otherwise. */
export function runTool(run: ToolRun): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      run.binary,
      run.args,
      {
        ...(run.env ? { env: run.env } : {}),
        timeout: run.timeoutMs ?? 60_000,
        maxBuffer: run.maxOutputBytes ?? 32 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (!error) {
          resolve(stdout);
          return;
        }
        const e = error as NodeJS.ErrnoException & { killed?: boolean };
        if (e.code === 'ENOENT') {
          reject(
            new StalledError(
              `${run.label}: ${run.binary} is not installed; set ${run.configuredBy} to its path`,
              {
                cause: error,
              },
            ),
          );
          return;
        }
        let why = e.killed ? `${run.step} took too long` : (stderr || e.message).trim();
        if (run.clean) why = run.clean(why);
        why = why.split('\n').slice(0, 5).join('; ').slice(0, 2000);
        reject(new StalledError(`${run.label}: ${run.step} failed: ${why}`, { cause: error }));
      },
    );
  });
}
