import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { askedBy } from '../../../src/kube/lookup-server.ts';
import { selfSignedLoopback } from '../../../src/kube/self-signed.ts';

describe('what a lookup request asks for', () => {
  it.each([
    ['/version', { type: 'discovery' }],
    ['/api', { type: 'discovery' }],
    ['/apis', { type: 'discovery' }],
    ['/api/v1', { type: 'discovery' }],
    ['/apis/apps', { type: 'discovery' }],
    ['/apis/apps/v1', { type: 'discovery' }],
    [
      '/api/v1/namespaces/shop/secrets/db',
      { type: 'object', base: '/api/v1', namespace: 'shop', plural: 'secrets', name: 'db' },
    ],
    [
      // RBAC names hold colons (helm's install check reads each object a chart renders).
      '/apis/rbac.authorization.k8s.io/v1/namespaces/shop/roles/web:dynamic-serving',
      {
        type: 'object',
        base: '/apis/rbac.authorization.k8s.io/v1',
        namespace: 'shop',
        plural: 'roles',
        name: 'web:dynamic-serving',
      },
    ],
    [
      '/apis/apps/v1/namespaces/shop/statefulsets',
      { type: 'object', base: '/apis/apps/v1', namespace: 'shop', plural: 'statefulsets', name: undefined },
    ],
  ])('%s', (path, asked) => {
    expect(askedBy(path)).toEqual(asked);
  });

  it.each([
    '/api/v1/secrets',
    '/api/v1/nodes',
    '/api/v1/namespaces/shop',
    '/api/v1/namespaces/shop/pods/web/exec',
    '/api/v1/namespaces/shop/secrets/..',
    '/api/v1/namespaces/shop/secrets/a%2fb',
    '/api/v1/namespaces/Shop/secrets/db',
    '/api/v1/namespaces/Shop',
    '/api/v1/namespaces/shop/Secrets',
    '/api/v1/namespaces/shop/secrets/a:',
    '/api/v1/namespaces/shop/secrets/:a',
    '/api/v1/namespaces/shop/secrets/a%3ab',
    '/api/v1/namespaces/shop:x/secrets/db',
    '/apis/apps/v1/statefulsets',
    '/openapi/v2',
    '/metrics',
    '/',
  ])('refuses %s', (path) => {
    expect(askedBy(path).type).toBe('refused');
  });

  it.each([
    ['/api/v1/nodes/n1', true],
    ['/apis/rbac.authorization.k8s.io/v1/clusterroles/reader', true],
    ['/apis/rbac.authorization.k8s.io/v1/clusterroles/web:subjectaccessreviews', true],
    ['/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/System:Reader', true],
    ['/api/v1/namespaces/shop', true],
    ['/api/v1/secrets', false],
    ['/api/v1/namespaces/shop/pods/web/exec', false],
  ])('a refusal of %s is quiet: %s', (path, quiet) => {
    const asked = askedBy(path);
    expect(asked.type === 'refused' && asked.quiet === true).toBe(quiet);
  });
});

describe('the endpoint certificate', () => {
  it('is a valid self-signed certificate for 127.0.0.1', () => {
    const { cert } = selfSignedLoopback();
    const x509 = new X509Certificate(cert);
    expect(x509.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(x509.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(x509.verify(x509.publicKey)).toBe(true);
    expect(x509.ca).toBe(true);
    expect(Date.parse(x509.validFrom)).toBeLessThan(Date.now());
    expect(Date.parse(x509.validTo)).toBeGreaterThan(Date.now() + 3_600_000);
  });

  it('is a new key and serial each time', () => {
    const a = new X509Certificate(selfSignedLoopback().cert);
    const b = new X509Certificate(selfSignedLoopback().cert);
    expect(a.serialNumber).not.toBe(b.serialNumber);
    expect(a.publicKey.export({ type: 'spki', format: 'der' })).not.toEqual(
      b.publicKey.export({ type: 'spki', format: 'der' }),
    );
  });
});
