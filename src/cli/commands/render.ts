// `mooring render PATH…`: prints the hydrated manifests (or, with -o table, the apply plan) that a deploy of
// these files would apply. Offline it knows nothing of the cluster; otherwise it reads existing versions and
// live objects through a read-only lookup.
import { setFlagsFromString } from 'node:v8';
import { type Command, Option } from 'commander';
import { errorMessage, StalledError } from '../../errors.ts';
import { guessedScopes } from '../../kube/scope.ts';
import { toYaml } from '../../render/canonical.ts';
import { tryParseImageRef } from '../../render/image-ref.ts';
import type { ImageArtifact } from '../../render/images.ts';

import { decryptedValues, filesRedactor, redactSecret } from '../../render/redact.ts';
import { type ClusterSnapshot, render } from '../../render/render.ts';
import { needsHashKey } from '../../render/versioning.ts';
import { readBoundedBytes } from '../../sources/local/bounded-read.ts';
import { redactError } from '../../sync/redact-report.ts';
import { type ClusterFlags, manifestBoundary, withManifestFlags } from '../cluster-flags.ts';
import { EXIT_USAGE, ExitError } from '../exit-codes.ts';
import { cliRenderOptions, type LocalInputFlags, readLocalManifests, withReadFlags } from '../local-input.ts';
import { checkedNames } from '../names.ts';
import { formatData, formatTable } from '../output.ts';

/** A content-hash key is 32 bytes: a file past this is not one (`/dev/zero` grew the command to gigabytes). */
const HASH_KEY_FILE_MAX_BYTES = 64 * 1024;

interface RenderFlags extends ClusterFlags, LocalInputFlags {
  application?: string;
  image: string[];
  allowNamespace: string[];
  agentNamespace: string;
  hashKeyFile?: string;
  offline?: boolean;
  showSecrets?: boolean;
  requireDigests?: boolean;
  output: 'yaml' | 'json' | 'table';
}

/** `--image registry/app:1.2@sha256:…`: an image artifact as a digest-pinned reference. */
export function parseImageFlag(value: string): ImageArtifact {
  const ref = tryParseImageRef(value);
  if (ref instanceof Error) throw new StalledError(`--image ${ref.message}`);
  if (!ref.digest) throw new StalledError(`--image "${value}" has no digest: give it as NAME[:TAG]@sha256:…`);
  const at = value.indexOf('@');
  const nameAndTag = value.slice(0, at);
  const name = ref.tag ? nameAndTag.slice(0, nameAndTag.length - ref.tag.length - 1) : nameAndTag;
  return { name, tag: ref.tag, digest: ref.digest };
}

/** Objects as kubectl prints several in JSON: one `v1 List`, which `kubectl apply -f -` reads back. */
export function asList(items: readonly unknown[]): { apiVersion: 'v1'; kind: 'List'; items: unknown[] } {
  return { apiVersion: 'v1', kind: 'List', items: [...items] };
}

export function renderCommand(
  program: Command,
  print: (text: string) => void,
  warn: (text: string) => void,
): void {
  withReadFlags(
    withManifestFlags(
      program
        .command('render')
        .description('print the hydrated manifests a deploy of these files would apply'),
    ),
  )
    .option('--offline', 'do not read existing versions and live objects from the cluster')
    .option('--require-digests', 'fail when an image is left without a digest')
    .option('--show-secrets', 'print Secret values instead of redacting them')
    .option(
      '--hash-key-file <file>',
      "the key of Secrets' content hash (the bytes of the agent's Secret mooring-content-hash-key), for --offline",
    )
    .addOption(
      new Option('-o, --output <format>', 'yaml or json manifests, or the plan as a table')
        .choices(['yaml', 'json', 'table'])
        .default('yaml'),
    )
    .action(async (paths: string[], flags: RenderFlags) => {
      // The launcher's --optimize-for-size (main.ts) keeps the agent and long deploys small, but a render holds its
      // whole set until it prints, and V8 then collects it again and again as the heap grows in small steps: a
      // third of the CPU of a 5 MB chart's render. Off for this short-lived command (measured on a loaded machine:
      // 5.8 s of CPU instead of 7.1, at a peak of 212 MB instead of 146 against helm template's 129 MB; bench:render).
      setFlagsFromString('--no-optimize-for-size');
      const images = flags.image.map(parseImageFlag);
      // Names given as flags are refused before the kubeconfig is read (the kubeconfig's namespace is checked below).
      checkedNames(flags.namespace ?? 'default', flags.application);
      // The cluster's part is loaded only with a cluster (render-cluster.ts).
      const cluster = flags.offline ? undefined : (await import('./render-cluster.ts')).clusterReading(flags);
      let namespace = cluster ? cluster.namespace : flags.namespace;
      // Checked before any request; a chart is rendered in the namespace the objects go to.
      const names = checkedNames(namespace ?? 'default', flags.application);
      const settings = cliRenderOptions(flags);
      const known = [...(settings.clusterScoped ?? [])];
      let snapshot: ClusterSnapshot = { versions: [], live: [] };
      let input: Awaited<ReturnType<typeof readLocalManifests>>;
      // A key is 32 bytes; a file of a few KiB is the most a key file may be (`/dev/zero` is not one).
      let hashKey: Uint8Array | undefined = flags.hashKeyFile
        ? await readBoundedBytes(flags.hashKeyFile, HASH_KEY_FILE_MAX_BYTES, { anyKind: true }).catch(
            (error: unknown) => {
              throw new ExitError(
                `error: --hash-key-file ${flags.hashKeyFile}: ${errorMessage(error)}`,
                EXIT_USAGE,
              );
            },
          )
        : undefined;
      let keyNeeded: boolean;
      try {
        // SOPS files are decrypted as read (the key file is read only when a file is encrypted); a chart folder is
        // rendered with the cluster's capabilities when there is a cluster.
        input = await readLocalManifests(paths, flags, names.namespace, {
          warn,
          ...(cluster ? { capabilities: cluster.capabilities } : {}),
          // Offline, a chart's lookup finds nothing, as in `helm template`.
          ...(cluster ? { lookup: cluster.lookup } : {}),
        });
        // Parsed once: render takes these objects (the cluster's lookup parses its own, which it places).
        const { objects } = input.parsed;
        // Versioned Secrets are hashed under the installation's key: from --hash-key-file, else read (never made)
        // from the cluster. Without one they are shown without a hash, as new versions, and a warning says so.
        keyNeeded = needsHashKey(objects, { versioned: {}, versioning: settings.versioning });
        if (cluster) {
          const read = await cluster.read(input.files, {
            limits: settings.limits,
            known,
            settings,
            keyNeeded: keyNeeded && !hashKey,
            agentNamespace: flags.agentNamespace,
          });
          snapshot = read.snapshot;
          hashKey ??= read.hashKey;
        } else {
          const guessed = guessedScopes(objects, known);
          if (guessed.length > 0)
            warn(
              `warning: offline, the scope of ${guessed.join(', ')} is guessed: namespaced; give --cluster-scoped ${guessed[0]} for a cluster-scoped kind`,
            );
        }
      } finally {
        cluster?.close();
      }
      const files = input.files;
      namespace ??= 'default';
      // Shown without --show-secrets: no value decrypted from a SOPS file, in the objects or in an error.
      const redactValues = filesRedactor(files);
      let result: ReturnType<typeof render>;
      try {
        result = render({
          files,
          parsed: input.parsed,
          namespace,
          application: names.application,
          images,
          snapshot,
          options: {
            ...settings,
            clusterScoped: known,
            hashKey,
            boundary: manifestBoundary(flags, namespace),
            ...(flags.requireDigests ? { requireDigests: true } : {}),
          },
        });
      } catch (error) {
        throw flags.showSecrets ? error : redactError(error, redactValues);
      }
      if (keyNeeded && !hashKey) {
        warn(
          `warning: versioned Secrets are shown without mooring.io/content-hash and as new versions: ${
            flags.offline
              ? 'offline, there is no hash key (give --hash-key-file)'
              : `no Secret ${flags.agentNamespace}/${(await import('./render-cluster.ts')).HASH_KEY_SECRET} yet (the first deploy makes it)`
          }`,
        );
      }
      for (const w of cluster?.warnings() ?? []) warn(`warning: ${flags.showSecrets ? w : redactValues(w)}`);
      for (const unused of result.images.unused) {
        warn(`warning: image artifact ${unused.name}${unused.tag ? `:${unused.tag}` : ''} matched no image`);
      }
      if (flags.output === 'table') {
        return print(
          formatTable(result.plan, [
            { header: 'object', value: (p) => p.object },
            {
              header: 'version',
              value: (p) =>
                p.version
                  ? `v${String(p.version.version).padStart(3, '0')}${p.version.reused ? ' (existing)' : ''}`
                  : '-',
            },
            {
              header: 'method',
              value: (p) => (p.strategy.recreate ? `recreate, ${p.strategy.method}` : p.strategy.method),
            },
            { header: 'source', value: (p) => `${p.origin.file}:${p.origin.line}` },
          ]),
        );
      }
      const decrypted = flags.showSecrets ? [] : decryptedValues(files);
      const shown = flags.showSecrets
        ? result.objects
        : result.objects.map((o) => redactSecret(o, decrypted));
      print(flags.output === 'json' ? formatData(asList(shown), 'json') : toYaml(shown).trimEnd());
    });
}
