// Vitest global setup of the integration tests: brings the test bed up once per run (or reuses one started
// with `npm run testbed -- up`) and hands its env to the tests through `inject('testbed')`.
import type { TestProject } from 'vitest/node';
import { down, type TestbedEnv, up } from './testbed/testbed.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    testbed: TestbedEnv;
  }
}

let startedHere = false;

export async function setup(project: TestProject): Promise<void> {
  const log = (line: string) => process.stderr.write(`testbed: ${line}\n`);
  const { env, started } = await up(log);
  startedHere = started;
  log(started ? `started for this run (logs in ${env.logs})` : 'reusing the running test bed');
  project.provide('testbed', env);
}

export async function teardown(): Promise<void> {
  // A bed someone started by hand stays up for them; one started for this run goes with it.
  if (startedHere) await down();
}
