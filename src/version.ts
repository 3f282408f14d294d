// The version of mooring, read from its package.json (the same file in src/ and dist/ layouts).
import { readFileSync } from 'node:fs';

interface PackageJson {
  name: string;
  version: string;
}

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as PackageJson;

export const VERSION: string = pkg.version;
