// Whether a member Lease counts, table-driven: renewTime not in the future (within the clock skew), within the
// shorter of its own and the configured duration, an address that is a plain origin, and in a Pod, a holder that is
// a running Pod of the workload (its IP from the API, whatever the Lease says). Plus the workload's selector.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { workloadSelector } from '../../../src/kube/member-pods.ts';
import {
  CLOCK_SKEW_MS,
  type MemberLease,
  plainOrigin,
  verifiedMember,
} from '../../../src/kube/member-verify.ts';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const at = (ms: number) => new Date(NOW + ms).toISOString().replace(/Z$/, '000Z');

function lease(renew: number, seconds = 15, address?: string, holder = 'mooring-abc'): MemberLease {
  const annotations: Record<string, string> = address === undefined ? {} : { 'mooring.io/address': address };
  return {
    metadata: { annotations },
    spec: { holderIdentity: holder, leaseDurationSeconds: seconds, renewTime: at(renew) },
  };
}

describe('a member Lease', () => {
  it.each([
    ['renewed just now', lease(-1000), true],
    ['renewed within the clock skew ahead', lease(CLOCK_SKEW_MS - 100), true],
    ['renewed beyond the clock skew ahead', lease(CLOCK_SKEW_MS + 100), false],
    ['renewed a year ahead', lease(365 * 24 * 3600 * 1000), false],
    ['expired by its own duration', lease(-16_000), false],
    ['claiming a day but past the configured 15s', lease(-20_000, 86_400), false],
    ['with a plain origin', lease(0, 15, 'http://10.0.0.7:8080'), true],
    ['with a trailing slash', lease(0, 15, 'http://10.0.0.7:8080/'), true],
    ['with a path', lease(0, 15, 'http://10.0.0.7:8080/stolen'), false],
    ['with a query', lease(0, 15, 'http://host/?x='), false],
    ['with an empty query', lease(0, 15, 'http://host:1?'), false],
    ['with a fragment', lease(0, 15, 'http://host:1#x'), false],
    ['with credentials', lease(0, 15, 'http://u:p@host:1'), false],
    ['with another scheme', lease(0, 15, 'file:///etc/passwd'), false],
    ['with no holder', { ...lease(0), spec: { ...lease(0).spec, holderIdentity: '' } }, false],
  ])('%s: counts %s', (_, l, counts) => {
    expect(verifiedMember(l, { now: NOW, durationMs: 15_000 }).member).toBe(counts);
  });

  it('in a Pod: counts only a running Pod of the workload, at its IP from the API', () => {
    const pods = new Map([['mooring-abc', 'http://10.1.0.5:8080']]);
    expect(verifiedMember(lease(0, 15, 'http://attacker/stolen?x='), { now: NOW, pods })).toEqual({
      member: true,
      identity: 'mooring-abc',
      address: 'http://10.1.0.5:8080',
      renewed: NOW,
    });
    expect(
      verifiedMember(lease(0, 15, 'http://10.1.0.9:8080', 'mooring-ghost'), { now: NOW, pods }),
    ).toMatchObject({ member: false, why: "no running Pod mooring-ghost of the agent's workload" });
    expect(verifiedMember(lease(CLOCK_SKEW_MS + 1, 15, undefined), { now: NOW, pods }).member).toBe(false);
  });

  it('takes an address only as the origin it is, for any path or query appended', () => {
    fc.assert(
      fc.property(
        fc
          .array(fc.constantFrom('stolen', '/', '%2F', '..', '.', 'hooks', '%3F', '~'), {
            minLength: 1,
            maxLength: 6,
          })
          .map((parts) => `/${parts.join('')}`)
          .filter((p) => p !== '/'),
        fc.option(fc.string({ maxLength: 12 }), { nil: undefined }),
        (path, query) => {
          const address = `http://10.0.0.7:8080${path}${query === undefined ? '' : `?${query}`}`;
          expect(plainOrigin(address)).toBeUndefined();
        },
      ),
      { seed: 35, numRuns: 200 },
    );
    expect(plainOrigin('https://[fd00::7]:8443')).toBe('https://[fd00::7]:8443');
  });
});

describe("the agent's workload", () => {
  it.each([
    [
      "the chart's selector labels",
      {
        'app.kubernetes.io/name': 'mooring',
        'app.kubernetes.io/instance': 'prod',
        'pod-template-hash': 'abc',
        'helm.sh/chart': 'mooring-1.2.0',
        'mooring.io/leader': 'true',
      },
      'app.kubernetes.io/instance=prod,app.kubernetes.io/name=mooring',
    ],
    [
      'other labels, but those that differ from Pod to Pod',
      { app: 'agent', 'pod-template-hash': 'abc', 'controller-revision-hash': 'x' },
      'app=agent',
    ],
  ])('from %s', (_, labels, selector) => {
    expect(workloadSelector(labels)).toBe(selector);
  });
});
