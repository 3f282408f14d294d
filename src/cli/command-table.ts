// The commands of the mooring CLI as data: how each is listed in `mooring --help`, and how its module is loaded.
// A command's module (and with it the cluster client, render or the agent) is imported only when that command
// runs or its own help is asked for, so `mooring version` and `mooring --help` start in a fraction of the time.
// test/unit/cli/command-table.test.ts checks these listings against the commands' own definitions.
import type { Command } from 'commander';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** Adds the full definition of one or more commands to the program. */
export type Register = (program: Command, io: CliIo) => void;

export interface CommandListing {
  name: string;
  /** The command's term in the parent's help, as commander prints it for the full definition. */
  term: string;
  description: string;
  /** Loads the module that defines this command (one module may define several). */
  load: () => Promise<Register>;
}

const config = async (): Promise<Register> => {
  const { configCommand } = await import('./commands/config.ts');
  return (program, io) => configCommand(program, io.stdout);
};
const control = async (): Promise<Register> => {
  const { controlCommands } = await import('./commands/control.ts');
  return (program, io) => controlCommands(program, io.stdout);
};
const del = async (): Promise<Register> => {
  const { deleteCommand } = await import('./commands/delete.ts');
  return (program, io) => deleteCommand(program, io.stdout);
};
const deploy = async (): Promise<Register> => {
  const { deployCommand } = await import('./commands/deploy.ts');
  return (program, io) => deployCommand(program, io.stdout, io.stderr);
};
const diff = async (): Promise<Register> => {
  const { diffCommand } = await import('./commands/diff.ts');
  return (program, io) => diffCommand(program, io.stdout, io.stderr);
};
const render = async (): Promise<Register> => {
  const { renderCommand } = await import('./commands/render.ts');
  return (program, io) => renderCommand(program, io.stdout, io.stderr);
};
const releases = async (): Promise<Register> => {
  const { releaseCommands } = await import('./commands/releases.ts');
  return (program, io) => releaseCommands(program, io.stdout, io.stderr);
};
const rollout = async (): Promise<Register> => {
  const { rolloutCommand } = await import('./commands/rollout.ts');
  return (program, io) => rolloutCommand(program, io.stdout);
};
const run = async (): Promise<Register> => {
  const { runCommand } = await import('./commands/run.ts');
  return (program) => runCommand(program);
};
const scale = async (): Promise<Register> => {
  const { scaleCommand } = await import('./commands/scale.ts');
  return (program, io) => scaleCommand(program, io.stdout);
};
const version = async (): Promise<Register> => {
  const { versionCommand } = await import('./commands/version.ts');
  return (program, io) => versionCommand(program, io.stdout);
};

/** In the order of `mooring --help`. */
export const COMMANDS: readonly CommandListing[] = [
  { name: 'config', term: 'config', description: 'work with mooring configuration files', load: config },
  {
    name: 'delete',
    term: 'delete [options] <kind/name>',
    description: 'delete an object, or all versions of a versioned object (one with --version)',
    load: del,
  },
  {
    name: 'deploy',
    term: 'deploy [options] <paths...>',
    description: 'render, apply and wait until every object is stable',
    load: deploy,
  },
  {
    name: 'diff',
    term: 'diff [options] [paths...]',
    description: 'show what a deploy would change, field by field, from a server-side dry run',
    load: diff,
  },
  {
    name: 'render',
    term: 'render [options] <paths...>',
    description: 'print the hydrated manifests a deploy of these files would apply',
    load: render,
  },
  {
    name: 'history',
    term: 'history [options] <deployment>',
    description: "a deployment's releases, newest first",
    load: releases,
  },
  {
    name: 'status',
    term: 'status [options] [deployment]',
    description:
      'where each deployment is: its current release, the last attempt, a suspension or rollback fence',
    load: releases,
  },
  {
    name: 'rollback',
    term: 'rollback [options] <deployment>',
    description:
      're-apply a recorded release exactly and hold the deployment there until a new commit or image',
    load: releases,
  },
  {
    name: 'resume',
    term: 'resume [options] <deployment>',
    description:
      'end a suspension and lift a rollback fence, whichever hold the deployment: the agent deploys the newest revision again',
    load: releases,
  },
  {
    name: 'reconcile',
    term: 'reconcile [options] <deployment>',
    description:
      "ask the running agent to poll a deployment's sources and sync it now, and follow the sync to its end",
    load: control,
  },
  {
    name: 'suspend',
    term: 'suspend [options] <deployment>',
    description:
      'stop syncing a deployment (the agent polls on and notes new commits and images) until mooring resume',
    load: control,
  },
  {
    name: 'promote',
    term: 'promote [options] <deployment>',
    description:
      'approve the promotion of a deployment (promote.approval: manual): the revision its upstream has had stable long enough',
    load: control,
  },
  {
    name: 'rollout',
    term: 'rollout',
    description: 'manage the rollout of a Deployment, StatefulSet or DaemonSet',
    load: rollout,
  },
  {
    name: 'run',
    term: 'run [options]',
    description:
      'run the agent: keep the cluster in sync with a folder (--watch DIR) or a configuration (--config FILE)',
    load: run,
  },
  {
    name: 'scale',
    term: 'scale [options] <kind/name>',
    description: 'set the number of replicas of a Deployment, ReplicaSet or StatefulSet',
    load: scale,
  },
  {
    name: 'version',
    term: 'version [options]',
    description: 'print the version of mooring (and of the cluster with --server)',
    load: version,
  },
];

/** The command that argv runs or asks help for (`mooring help deploy` needs deploy's definition), if any. */
export function commandNamed(argv: readonly string[]): CommandListing | undefined {
  const [first, second] = argv;
  const name = first === 'help' ? second : first;
  return COMMANDS.find((c) => c.name === name);
}
