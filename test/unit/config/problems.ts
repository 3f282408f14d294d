// The problems a configuration is refused for, as parseConfig reports them (shared by the configuration's tests).
import { ConfigError, parseConfig } from '../../../src/config/load.ts';

export function problemsOf(text: string) {
  try {
    parseConfig(text, 'agent.yaml');
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected the config to be rejected');
}
