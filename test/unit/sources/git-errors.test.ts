// How what isomorphic-git throws is said (src/sources/git/errors.ts): an answer the library could not read names
// what it found wrong, instead of claiming the server could not be reached.
import { Errors } from 'isomorphic-git';
import { describe, expect, it } from 'vitest';
import { TransientError } from '../../../src/errors.ts';
import { gitNetworkError } from '../../../src/sources/git/errors.ts';

describe('Git errors', () => {
  it("says what in the server's answer could not be read, and tries again at the next poll", () => {
    const error = gitNetworkError(new Errors.InternalError('Unexpected end of file'), {
      url: 'https://user:secret@git.example.test/fleet.git',
      timeoutMs: 60_000,
      timedOut: false,
    });
    expect(error).toBeInstanceOf(TransientError);
    expect(error.message).toContain("the server's answer could not be read (Unexpected end of file)");
    expect(error.message).not.toContain('cannot reach');
    expect(String(error.subject?.describe)).not.toContain('secret');
  });
});
