// Replicas sharing the work (leaderElection.mode: shared; docs/replicas.md). Membership Leases say which replicas
// are live; assign.ts says which deployments each syncs; this module keeps both for one replica: the share of the
// configuration it syncs, the owner of every deployment (the status page, metrics), and the other members'
// addresses (webhooks passed on).
import type { MooringConfig } from '../config/schema.ts';
import type { KubeApi } from '../kube/api.ts';
import { MemberPods } from '../kube/member-pods.ts';
import { type Member, Membership } from '../kube/membership.ts';
import { assign } from './assign.ts';

export interface ShardOptions {
  namespace: string;
  prefix: string;
  identity: string;
  address: string | undefined;
  durationMs: number;
  renewMs: number;
  loadFactor: number;
  /**
   * In a Pod: its name and the agent's port. Members must then be Pods of the agent's workload, and webhooks go to
   * their IPs at this port (src/kube/member-pods.ts).
   */
  pod?: { name: string; port: number } | undefined;
}

export class Shard {
  readonly identity: string;
  private readonly membership: Membership;
  private readonly loadFactor: number;
  private members: string[] = [];
  private owners = new Map<string, string>();

  constructor(api: KubeApi, options: ShardOptions) {
    this.identity = options.identity;
    this.loadFactor = options.loadFactor;
    const { pod, ...rest } = options;
    this.membership = new Membership(api, {
      ...rest,
      pods: pod && new MemberPods(api, { namespace: options.namespace, pod: pod.name, port: pod.port }),
    });
  }

  /** Joins, and calls `onChange` whenever the live members change (first once this replica has joined). */
  run(handlers: {
    onChange: (members: readonly string[]) => void;
    onError: (error: unknown) => void;
    onRefused?: (lease: string, why: string) => void;
  }): void {
    this.membership.run({
      onRefused: handlers.onRefused,
      onChange: (members) => {
        this.members = members;
        handlers.onChange(members);
      },
      onError: handlers.onError,
    });
  }

  /** Whether `identity` is a live member (a replica whose Lease expired holds no deployment). */
  live(identity: string): boolean {
    return this.membership.isLive(identity);
  }

  /** Whether `identity` is no live member, asked of its own Lease now (Membership.gone). */
  gone(identity: string): Promise<boolean> {
    return this.membership.gone(identity);
  }

  get liveMembers(): readonly string[] {
    return this.members;
  }

  /** The other live members, with where they take webhooks. */
  peers(): Member[] {
    return this.membership.live.filter((m) => m.identity !== this.identity);
  }

  /**
   * The share of `config` this replica syncs under the current members: the same configuration with only its
   * deployments. Nothing while it is no member (it could not renew its Lease).
   */
  share(config: MooringConfig): MooringConfig {
    this.owners = assign(
      config.deployments.map((d) => d.name),
      this.members,
      { loadFactor: this.loadFactor },
    );
    const mine = config.deployments.filter((d) => this.owners.get(d.name) === this.identity);
    this.membership.announce(mine.map((d) => d.name));
    return { ...config, deployments: mine };
  }

  /** The replica that syncs `deployment`, as this replica computed it last. */
  ownerOf(deployment: string): string | undefined {
    return this.owners.get(deployment);
  }

  /** How many deployments each live member syncs. */
  loads(): Map<string, number> {
    const loads = new Map<string, number>(this.members.map((m) => [m, 0]));
    for (const owner of this.owners.values()) loads.set(owner, (loads.get(owner) ?? 0) + 1);
    return loads;
  }

  stop(): Promise<void> {
    return this.membership.stop();
  }
}
